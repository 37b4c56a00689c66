"""The host a cell runs on: cgroups and CPU pinning, the Docker engine, images and
containers, network namespaces, sysctls, idle CPUs, the CPUs' steadiness, /proc
and sock_diag readers, where programs run, and the run's environment.json.
Only the cell stage uses it (an import-linter contract in pyproject.toml)."""
