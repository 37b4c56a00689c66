#!/bin/sh
# Builds NGINX Unit from a release source tarball into PREFIX, with its
# python3 module on the interpreter whose `-config` script is PYTHON_CONFIG
# and its perl module on the `perl` on PATH (Debian's, with libperl-dev).
#   envs/unit-build.sh SOURCE.tar.gz PYTHON_CONFIG PREFIX
# Used by scripts/install --unit on the host and by the servers image
# (envs/docker/servers.Dockerfile), so both carry the same build. The tarball's
# digest must be the one pinned in envs/unit.txt (checked here, before any
# of its code runs). Nothing of Unit is kept in the repository.
set -eu
source=$1 python_config=$2 prefix=$3
pins=$(dirname "$0")/unit.txt
pin() { awk -v key="$1" '$1 == key {print $2}' "$pins"; }
version=$(pin version)

echo "$(pin sha256)  $source" | sha256sum -c --quiet - || {
    echo "unit-build: $source does not have the sha256 pinned in $pins" >&2
    exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/unit-build-XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$source" -C "$work"
cd "$work/unit-$version"
# State, logs and the control socket are given on unitd's command line by
# each run (its private run directory); these defaults only keep them in PREFIX.
./configure --prefix="$prefix" --statedir="$prefix/var/lib/unit" --logdir="$prefix/var/log/unit" \
    --runstatedir="$prefix/var/run/unit" --tmpdir=/tmp
./configure python --config="$python_config"
./configure perl
make -j"$(nproc)"
rm -rf "$prefix"
make install
mkdir -p "$prefix/source"
cp "$source" "$prefix/source/unit-$version.tar.gz"
