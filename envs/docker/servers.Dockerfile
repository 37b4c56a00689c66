# The image a docker-isolated server runs in (profile key `isolation: docker`),
# built from the repository root by serverbench on first use:
#   docker build --tag serverbench/servers:bookworm --file envs/docker/servers.Dockerfile .
# The same Debian packages and pinned Python servers as the host install, at
# the same paths, so a catalogue command means the same thing in and out.
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/opt/serverbench/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

COPY envs/ /opt/serverbench/envs/
# Load tools, chromium and the build-only packages stay on the host.
RUN apt-get update -q \
    && grep -v '^\s*#' /opt/serverbench/envs/apt.txt | awk 'NF {print $1}' \
       | grep -vxE 'wrk|apache2-utils|nghttp2-client|chromium|fonts-dejavu-core|cgroup-tools' \
       | xargs apt-get install -y -q --no-install-recommends \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/serverbench/venv \
    && sed -n '/^# servers/,$p' /opt/serverbench/envs/python.txt > /tmp/servers-from-harness.txt \
    && /opt/serverbench/venv/bin/pip install -q -r /tmp/servers-from-harness.txt \
       -r /opt/serverbench/envs/python-servers.txt -c /opt/serverbench/envs/python-constraints.txt \
    && /opt/serverbench/venv/bin/pip install -q --no-deps -r /opt/serverbench/envs/python-nodeps.txt \
    && python3 -m venv /opt/serverbench/system-venv \
    && /opt/serverbench/system-venv/bin/pip install -q -r /opt/serverbench/envs/system-venv.txt
