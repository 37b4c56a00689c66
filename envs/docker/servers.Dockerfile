# The image a docker-isolated server runs in (profile key `isolation: docker`).
# serverbench builds it on first use (serverbench.images), with envs/ as the
# context, on a Debian base it made with debootstrap (no image registry):
#   docker build --network host --build-arg BASE=serverbench/debian:... \
#       --file envs/docker/servers.Dockerfile envs
# The same Debian packages and pinned Python servers as the host install, so
# a catalogue command means the same thing in and out of the container.
ARG BASE=serverbench/debian:bookworm
FROM ${BASE}

ENV DEBIAN_FRONTEND=noninteractive \
    PATH=/opt/serverbench/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

COPY . /opt/serverbench/envs/
# Load tools, the browser and the host-only tools stay on the host.
RUN apt-get update -q \
    && { echo ca-certificates; grep -v '^\s*#' /opt/serverbench/envs/apt.txt | awk 'NF {print $1}' \
         | grep -vxE 'wrk|apache2-utils|nghttp2-client|chromium|fonts-dejavu-core|cgroup-tools'; } \
       | xargs apt-get install -y -q --no-install-recommends \
    && rm -rf /var/lib/apt/lists/*
# The servers of envs/python.txt are the lines from its "# servers" heading on.
RUN python3 -m venv /opt/serverbench/venv \
    && sed -n '/^# servers$/,$p' /opt/serverbench/envs/python.txt > /tmp/python-servers-of-harness.txt \
    && /opt/serverbench/venv/bin/pip install -q --cert /etc/ssl/certs/ca-certificates.crt \
       -r /tmp/python-servers-of-harness.txt -r /opt/serverbench/envs/python-servers.txt -c /opt/serverbench/envs/python-constraints.txt \
    && /opt/serverbench/venv/bin/pip install -q --cert /etc/ssl/certs/ca-certificates.crt \
       --no-deps -r /opt/serverbench/envs/python-nodeps.txt \
    && python3 -m venv /opt/serverbench/system-venv \
    && /opt/serverbench/system-venv/bin/pip install -q --cert /etc/ssl/certs/ca-certificates.crt \
       -r /opt/serverbench/envs/system-venv.txt
# NGINX Unit, when the context carries its source (config docker.images.sources:
# the tarball scripts/install --unit verified on the host), by the host's recipe
# on this image's Python, into the same prefix (envs/unit.txt).
RUN if [ -f /opt/serverbench/envs/sources/unit.tar.gz ]; then \
        /opt/serverbench/envs/unit-build.sh /opt/serverbench/envs/sources/unit.tar.gz \
            "$(/opt/serverbench/venv/bin/python -c 'import sysconfig as s; print(s.get_config_var("BINDIR") + "/python" + s.get_config_var("LDVERSION") + "-config")')" \
            "$(awk '$1 == "prefix" {print $2}' /opt/serverbench/envs/unit.txt)"; \
    fi
