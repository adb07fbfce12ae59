"""The ``fivefold`` command line: one module per group of commands."""
