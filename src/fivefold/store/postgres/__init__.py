"""The PostgreSQL backend: pgvector HNSW for the dense leg, BM25 from per-namespace posting and
document-frequency tables, the graph walk and the temporal range in SQL. ``store.py`` is the
``Store``; ``schema.py`` holds the DDL, its migrations and the longer statements."""
