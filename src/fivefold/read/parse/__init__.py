"""The read path's Stage 1: turn query text into a ``ParsedQuery`` (time window, entities,
negations)."""
