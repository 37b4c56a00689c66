"""The charts a run draws, by name and title: what the workflow lists when it is
parsed (so parsing needs no charting library)."""

METRIC_TITLES = {
    "rps": "Requests per second",
    "latency": "Latency",
    "memory": "Server memory",
    "errors": "Error rate",
    "cpu": "Server CPU",
}
EXTRA_TITLES = {
    "languages": "One language against another",
    "ceiling": "Share of the ceiling",
    "workers": "Workers over time (autoscaling)",
    "steady": "Requests/s second by second (steady state)",
    "load": "Latency against offered load (open loop)",
}
CHARTS = METRIC_TITLES | EXTRA_TITLES
