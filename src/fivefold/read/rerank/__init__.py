"""Post-fusion policies: negation demotion, cross-encoder rerank, MMR, and query rewrites."""
