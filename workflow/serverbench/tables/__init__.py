"""Stage 3, tables: the records merged into runs.csv, summary.csv, latency.csv,
workers.csv and steady.csv, with each cell's estimates and each server's knee."""
