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
    "forest": "Every comparison at a glance",
    "languages": "One language against another",
    "ceiling": "Share of the ceiling",
    "workers": "Workers over time (autoscaling)",
    "steady": "Requests/s second by second (steady state)",
    "load": "Latency against offered load (open loop)",
}
# The forest plot comes first on the page, right under the Answers.
CHARTS = {"forest": EXTRA_TITLES["forest"]} | METRIC_TITLES | EXTRA_TITLES
