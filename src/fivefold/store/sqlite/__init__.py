"""The embedded backend: one SQLite file (WAL) with FTS5 for BM25 and a usearch index beside it
for the dense leg. ``store.py`` is the ``Store``; ``schema.py`` holds every statement."""
