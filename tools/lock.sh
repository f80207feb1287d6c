#!/usr/bin/env bash
# `make lock`: resolve pyproject.toml's ranges (plus the build backend) to exact versions with hashes, for
# Python 3.11 on every platform. requirements/dev.lock is what `make setup` installs into .venv; broker.lock and
# verifier.lock (subsets, held to dev.lock's versions) go into the container images.
# Pins already in the locks are kept while they satisfy pyproject.toml; UPGRADE=1 moves every pin to the newest.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
[ -x "$UV" ] || { echo "lock: $UV is missing: run make setup first" >&2; exit 1; }
build_requires() {
  python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))'
}
compile() {  # OUTPUT [uv options...]
  local output=$1; shift
  build_requires | "$UV" pip compile --quiet pyproject.toml - --universal --python-version 3.11 --generate-hashes \
    --custom-compile-command "make lock" ${UPGRADE:+--upgrade} -o "$output" "$@"
}
mkdir -p requirements
compile requirements/dev.lock --extra dev --extra spark
compile requirements/broker.lock -c requirements/dev.lock
compile requirements/verifier.lock -c requirements/dev.lock --extra spark
echo "lock: wrote requirements/dev.lock, broker.lock and verifier.lock"
