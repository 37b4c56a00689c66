"""Stage 4, decide: which cells may decide (comparability, one rule), the declared
comparisons and their verdicts, a server's capacity, adaptive repeats, and
``serverbench compare`` of two runs."""
