"""The record of a cell: typed, versioned sections, and the flags judged on it.
It imports no stage, so every stage may read it."""
