"""Benchmark harness, engine-independent part: dataset loaders that turn LoCoMo, LongMemEval and
BEIR into one neutral structure (``datasets``), ranking metrics (``metrics``) and paired
significance tests (``stats``). Nothing here imports the engine, so the same numbers can score
fivefold and any baseline."""
