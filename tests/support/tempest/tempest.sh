#!/usr/bin/env bash
# tempest: tempest's own QoS-placement scenario suite (tempest.scenario.test_network_qos_placement) against the
# mini-cloud, minbw reporting the providers (docs/tempest.md: each test's outcome and why).
#
#   tempest.sh install        tempest from the package registry into a venv of its own (a no-op when current)
#   tempest.sh config         prepare the running mini-cloud and write $WORKSPACE/etc/tempest.conf (config.py)
#   tempest.sh run [REGEX]    tempest run --serial --regex REGEX (default: the whole module) in $WORKSPACE;
#                             the run's subunit stream is kept in $WORKSPACE/last.subunit, its table (test,
#                             status, start, stop) in $WORKSPACE/last.csv
#
# Env:
#   TEMPEST_VENV=dir       the venv (default .state/tempest-venv)
#   TEMPEST_WORKSPACE=dir  tempest.conf, .stestr.conf, logs (default $MINICLOUD_STATE-tempest, beside the cloud)
#   MINICLOUD_STATE=dir    the cloud (default .state/minicloud), started with
#                          MINICLOUD_PLACEMENT_PLUGIN=0 MINICLOUD_COMPUTES=2 MINICLOUD_SPARE_COMPUTE=0 MINICLOUD_L3=1
#   MINBW_VENV=dir         the venv with minbw and openstacksdk that config.py runs in (default .venv)
# A cloud in a network namespace: run `config` and `run` inside it (ip netns exec NAME tempest.sh ...).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
# the newest tempest that installs on Python 3.11 and runs against Nova 34 / Neutron 29 / Placement 16
TEMPEST_VERSION=47.0.0
VENV=${TEMPEST_VENV:-$ROOT/.state/tempest-venv}
STATE=${MINICLOUD_STATE:-$ROOT/.state/minicloud}
WORKSPACE=${TEMPEST_WORKSPACE:-$STATE-tempest}
MINBW_PY=${MINBW_VENV:-$ROOT/.venv}/bin/python
MODULE=tempest.scenario.test_network_qos_placement

say() { echo "[tempest] $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

installed() { [ "$(cat "$VENV/.tempest-version" 2>/dev/null)" = "$TEMPEST_VERSION" ] && [ -x "$VENV/bin/tempest" ]; }

do_install() {
    if installed; then say "tempest $TEMPEST_VERSION is installed in $VENV"; return 0; fi
    say "installing tempest $TEMPEST_VERSION into $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$ROOT/tests/support/lib/pip_install.sh" "$VENV" -q --upgrade pip >"$VENV.log" 2>&1
    "$ROOT/tests/support/lib/pip_install.sh" "$VENV" -q "tempest==$TEMPEST_VERSION" >>"$VENV.log" 2>&1 \
        || { tail -20 "$VENV.log"; die "pip install tempest==$TEMPEST_VERSION failed"; }
    echo "$TEMPEST_VERSION" >"$VENV/.tempest-version"
}

do_config() {
    installed || die "tempest is not installed: tempest.sh install"
    mkdir -p "$WORKSPACE"
    local site
    site=$("$VENV/bin/python" -c 'import os, tempest; print(os.path.dirname(os.path.dirname(tempest.__file__)))')
    printf '[DEFAULT]\ntest_path=%s/tempest/test_discover\ntop_dir=%s\ngroup_regex=([^\\.]*\\.)*\n' "$site" "$site" \
        >"$WORKSPACE/.stestr.conf"
    MINICLOUD_STATE=$STATE PYTHONPATH=$ROOT/python:$ROOT${PYTHONPATH:+:$PYTHONPATH} \
        "$MINBW_PY" "$HERE/config.py" "$WORKSPACE"
}

do_run() {
    local regex=${1:-$MODULE}
    [ -f "$WORKSPACE/etc/tempest.conf" ] || die "no $WORKSPACE/etc/tempest.conf: tempest.sh config"
    cd "$WORKSPACE"
    # serial: the tests of a class make provider networks with the same VLAN id
    "$VENV/bin/tempest" run --config-file "$WORKSPACE/etc/tempest.conf" --serial --regex "$regex" \
        --subunit >"$WORKSPACE/last.subunit" || true
    "$VENV/bin/subunit2pyunit" <"$WORKSPACE/last.subunit" 2>&1 | grep -E '\.\.\. |^(FAIL|ERROR):' || true
    "$VENV/bin/subunit2csv" <"$WORKSPACE/last.subunit" >"$WORKSPACE/last.csv"
    "$VENV/bin/subunit-stats" <"$WORKSPACE/last.subunit" || true
}

cmd=${1:-}
shift || true
case $cmd in
    install) do_install ;;
    config) do_config ;;
    run) do_run "$@" ;;
    *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
