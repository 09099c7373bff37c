#!/usr/bin/env bash
# pip_install.sh VENV ARG... : `pip install ARG...` into the virtualenv VENV (made by the caller), done by uv
# (`uv pip install --python VENV/bin/python --compile-bytecode ARG...`): the same packages from the same registry,
# resolved the same way, with their bytecode compiled as pip compiles it, in a fraction of pip's time (it
# downloads, builds and installs in parallel; bench/results/setup-time-2026-12-06.md). uv itself comes from the
# package registry once, pinned, into a virtualenv of its own (.state/uv, under a lock: the set-up steps of
# `make test` run side by side); the virtualenvs it installs into do not hold it. The set-up's installers (the
# Makefile's `setup`, tests/support/lib/common.sh's venv_install, tests/support/tempest/tempest.sh) go through
# here; README.md's install block, which tests/support/tour.py runs as a user does, stays pip's.
set -euo pipefail
UV_VERSION=0.13.8
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
tools=$repo/.state/uv
venv=$1; shift
# `uv --version`: "uv 0.13.8 (x86_64-unknown-linux-gnu)"
has_uv() { [ "$("$tools/bin/uv" --version 2>/dev/null | cut -d" " -f2)" = "$UV_VERSION" ]; }

if ! has_uv; then
    mkdir -p "$repo/.state"
    exec 9>"$repo/.state/uv.lock"
    flock 9
    if ! has_uv; then
        rm -rf "$tools"
        python3 -m venv "$tools"
        "$tools/bin/python" -m pip install -q "uv==$UV_VERSION"
    fi
    exec 9>&-
fi
exec "$tools/bin/uv" pip install --python "$venv/bin/python" --compile-bytecode "$@"
