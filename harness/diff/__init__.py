"""The differential engine: run the same operations against two targets, normalise what comes back,
compare it field by field, and shrink every difference to its smallest case."""
