"""The write pipeline: each item validated and inferred, embedded, and written in one
transaction."""
