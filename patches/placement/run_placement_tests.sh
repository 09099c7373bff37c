#!/usr/bin/env bash
# Placement's own unit and functional test suites (from the openstack-placement 16.0.0 sdist), stock and with
# patches/placement/*.patch applied. What docs/placement-overcommit.md reports was run this way.
#
#   bash patches/placement/run_placement_tests.sh [WORKDIR] [STESTR-FILTER...]
#
# WORKDIR (default: a new temporary directory) gets the sdist, a venv (python3 -m venv; the sdist installed
# editable with its test dependencies, pinned by tests/support/minicloud/constraints.txt) and a git repository of the
# sdist, so that the patch is applied and taken back with git. STESTR-FILTER (optional) narrows the tests, e.g.
# placement.tests.functional.db.test_allocation. Prints one line per run (passed / skipped / failed) and exits 1
# when a run with the patch has a failure. Needs network access to PyPI (pip download) and ~25 minutes on 2 CPUs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
W=${1:-$(mktemp -d /tmp/placement-tests-XXXXXX)}
shift || true
FILTER=("$@")
VERSION=16.0.0
mkdir -p "$W"
cd "$W"
if [ ! -d src ]; then
    python3 -m pip download -q --no-binary :all: --no-deps "openstack-placement==$VERSION" -d sdist
    mkdir src
    tar xzf sdist/openstack_placement-$VERSION.tar.gz -C src --strip-components 1
    git -C src -c safe.directory='*' init -q
    git -C src -c safe.directory='*' add -A
    git -C src -c safe.directory='*' -c user.name=minbw -c user.email=minbw@example.invalid commit -q -m "sdist $VERSION"
fi
if [ ! -x venv/bin/stestr ]; then
    python3 -m venv venv
    venv/bin/pip install -q -c "$ROOT/tests/support/minicloud/constraints.txt" -e ./src stestr oslotest testtools fixtures \
        gabbi wsgi-intercept cryptography PyMySQL
fi
G=(git -C src -c safe.directory='*')
export PATH=$W/venv/bin:$PATH OS_TEST_TIMEOUT=160 LC_ALL=C.UTF-8

run() {  # label test-path
    local label=$1 path=$2 log=$W/$1.log
    (cd src && rm -rf .stestr && stestr init >/dev/null && stestr --test-path="$path" run --concurrency 2 \
        "${FILTER[@]}" >"$log" 2>&1) || true
    local counts
    counts=$(grep -E '^ - (Passed|Skipped|Failed):' "$log" | tr -d ' -' | tr '\n' ' ' || true)
    printf '%-20s %s\n' "$label" "${counts:-no test matched (see $log)}"
}

"${G[@]}" checkout -q -- .
run stock-unit ./placement/tests/unit
run stock-functional ./placement/tests/functional
for p in "$ROOT"/patches/placement/*.patch; do patch -s -p1 -d src <"$p"; done
run patched-unit ./placement/tests/unit
run patched-functional ./placement/tests/functional
"${G[@]}" checkout -q -- .
"${G[@]}" clean -qfd placement
! grep -qE '^ - Failed: [1-9]' "$W"/patched-*.log
