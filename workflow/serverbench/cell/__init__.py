"""Stage 2, cell: one measured job. Launch (placeholders, isolation, start, ready),
verify, warm up, load with the monitor and sampler beside it, parse, fairness,
self-checks, stop; then its record assembled and written (``cell.phases``)."""
