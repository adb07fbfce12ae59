"""The read pipeline: arguments, parse (Stage 1), plan (Stage 2), retrieve, fuse, rerank, cache,
confidence."""
