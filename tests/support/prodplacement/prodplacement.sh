#!/usr/bin/env bash
# prodplacement: a production-style Placement on 127.0.0.1 for minbw's tests and benchmarks.
#
# The real openstack-placement 16.0.0 under uWSGI (N worker processes, as tests/support/minicloud/cloud.sh runs it)
# on its own MariaDB instance (Debian's mariadb-server; own datadir, socket, pid file and port), noauth2 by
# default; with PRODPLACEMENT_AUTH=keystone also a real Keystone 30.0.0 (own database, configurable token
# lifetime) and Placement behind keystonemiddleware. Nothing is shared with the mini-cloud: other ports,
# other state directory (the Python venv, .venv-cloud, is the mini-cloud's, installed by
# `tests/support/minicloud/cloud.sh install`, which never starts anything).
#
#   prodplacement.sh up       wipe state, install if needed, configure, start, wait until ready
#   prodplacement.sh down     stop every process (own pid files / process groups)
#   prodplacement.sh status   one line per process; exit 1 when one is not running
#   prodplacement.sh install  only install (apt + venv); idempotent
#
# Env:
#   PRODPLACEMENT_STATE=dir              state, config, logs, pid files (default .state/prodplacement)
#   PRODPLACEMENT_VENV=dir               the venv (default .venv-cloud, the mini-cloud's)
#   PRODPLACEMENT_WORKERS=4              uWSGI worker processes of Placement
#   PRODPLACEMENT_AUTH=noauth2|keystone  Placement's auth (default noauth2)
#   PRODPLACEMENT_TOKEN_EXPIRATION=3600  Keystone's [token] expiration, seconds (keystone only)
#   PRODPLACEMENT_CONFLICT_RETRIES=10    Placement's [placement] allocation_conflict_retry_count, upstream's
#                                        default (on MariaDB/MySQL it overcommits under concurrent claims:
#                                        docs/placement-overcommit.md; 1 avoids that)
#   PRODPLACEMENT_PATCHED=0              1: Placement with patches/placement/*.patch applied (the fix of that
#                                        overcommit), as an overlay of the venv's placement package in
#                                        $PRODPLACEMENT_STATE/patched (uWSGI's pythonpath); the venv is untouched
#   PRODPLACEMENT_HARAKIRI=0             uWSGI's harakiri, seconds: the master kills a worker whose request has run
#                                        that long (0: never, uWSGI's default); harakiri_probe.py measures it
#   PRODPLACEMENT_DB_PORT=13406          MariaDB's port (the mini-cloud's is 13306)
#   PRODPLACEMENT_PORT=18778             Placement's port (the mini-cloud's is 8778)
#   PRODPLACEMENT_KEYSTONE_PORT=15400    Keystone's port (the mini-cloud's is 5000)
#   PRODPLACEMENT_SKIP_INSTALL=1         never run apt/pip (fail if something is missing)
#
# Client: OS_CLIENT_CONFIG_FILE=$PRODPLACEMENT_STATE/clouds.yaml OS_CLOUD=prodplacement (mode 0600).
# shellcheck disable=SC2034  # the upper-case variables of the templates are read by render (lib/common.sh)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
S=$(realpath -m "${PRODPLACEMENT_STATE:-$ROOT/.state/prodplacement}")
VENV=$(realpath -m "${PRODPLACEMENT_VENV:-$ROOT/.venv-cloud}")
WORKERS=${PRODPLACEMENT_WORKERS:-4}
AUTH=${PRODPLACEMENT_AUTH:-noauth2}
EXPIRATION=${PRODPLACEMENT_TOKEN_EXPIRATION:-3600}
CONFLICT_RETRIES=${PRODPLACEMENT_CONFLICT_RETRIES:-10}
PATCHED=${PRODPLACEMENT_PATCHED:-0}
HARAKIRI=${PRODPLACEMENT_HARAKIRI:-0}
IP=127.0.0.1
DB_PORT=${PRODPLACEMENT_DB_PORT:-13406}
PORT=${PRODPLACEMENT_PORT:-18778}
KS_PORT=${PRODPLACEMENT_KEYSTONE_PORT:-15400}
KS="http://$IP:$KS_PORT"
URL="http://$IP:$PORT"
PASS=prodplacement-secret
DB_USER=placement
DB_PASS=prodplacement-db
CLOUD=prodplacement
# the library: PY, ETC, LOG, RUN (from S and VENV), DBURL; logging (say, die), templates (render), processes
# (start, alive, stop, fail_service, wait_for, http_ok, uwsgi_ini), the venv, MariaDB and Keystone: shared with
# the mini-cloud
SAY_TAG=prodplacement
UWSGI_LISTEN=128  # the listen queue of the uWSGI servers, for many concurrent clients
# shellcheck source=../lib/common.sh
. "$ROOT/tests/support/lib/common.sh"
T=$HERE/templates  # the configuration templates (render)

case $AUTH in noauth2|keystone) ;; *) echo "PRODPLACEMENT_AUTH must be noauth2 or keystone, got '$AUTH'" >&2; exit 2;; esac
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || { echo "PRODPLACEMENT_WORKERS must be a positive number, got '$WORKERS'" >&2; exit 2; }
case $PATCHED in 0|1) ;; *) echo "PRODPLACEMENT_PATCHED must be 0 or 1, got '$PATCHED'" >&2; exit 2;; esac
case $HARAKIRI in ''|*[!0-9]*) echo "PRODPLACEMENT_HARAKIRI must be whole seconds (0: none), got '$HARAKIRI'" >&2; exit 2;; esac
[[ $CONFLICT_RETRIES =~ ^[1-9][0-9]*$ ]] || { echo "PRODPLACEMENT_CONFLICT_RETRIES must be a positive number, got '$CONFLICT_RETRIES'" >&2; exit 2; }
[[ $EXPIRATION =~ ^[1-9][0-9]*$ ]] || { echo "PRODPLACEMENT_TOKEN_EXPIRATION must be seconds (> 0), got '$EXPIRATION'" >&2; exit 2; }
for p in "$DB_PORT" "$PORT" "$KS_PORT"; do
    [[ $p =~ ^[0-9]+$ ]] && [ "$p" -gt 0 ] && [ "$p" -lt 65536 ] || { echo "bad port '$p'" >&2; exit 2; }
done

# ---------------------------------------------------------------- install
venv_ok() { venv_has openstack-placement==16.0.0 keystone==30.0.0 pymysql uwsgi keystonemiddleware python-keystoneclient; }

do_install() {
    mkdir -p "$S"
    if ! command -v mariadbd >/dev/null 2>&1 || ! command -v mariadb-install-db >/dev/null 2>&1; then
        [ "${PRODPLACEMENT_SKIP_INSTALL:-0}" = 1 ] && die "missing Debian package: mariadb-server"
        say "apt-get install mariadb-server"
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server; } \
            >"$S/install-apt.log" 2>&1 || { tail -20 "$S/install-apt.log" >&2; die "apt-get install mariadb-server failed"; }
    fi
    placement_venv_ensure "${PRODPLACEMENT_SKIP_INSTALL:-0}" "openstack-placement 16.0.0 / keystone 30.0.0 / uwsgi / pymysql"
}

# ---------------------------------------------------------------- configuration

write_configs() {
    mkdir -p "$ETC/placement" "$ETC/keystone" "$S/keystone"
    {
        placement_conf False "$([ "$AUTH" = keystone ] && echo keystone || echo noauth2)"
        render "$T/placement-retries.conf.in"
        [ "$AUTH" = keystone ] && keystone_authtoken placement
    } >"$ETC/placement/placement.conf"
    uwsgi_ini placement "$PORT" placement.wsgi.api:application "$WORKERS" "OS_PLACEMENT_CONFIG_DIR=$ETC/placement"
    if [ "$PATCHED" = 1 ]; then
        patched_overlay
        echo "pythonpath = $S/patched" >>"$ETC/uwsgi-placement.ini"
    fi
    if [ "$HARAKIRI" != 0 ]; then
        printf 'harakiri = %s\nharakiri-verbose = true\n' "$HARAKIRI" >>"$ETC/uwsgi-placement.ini"
    fi

    [ "$AUTH" = keystone ] || return 0
    # Keystone's cache as the mini-cloud's (tests/support/minicloud/templates/keystone-cache.conf.in: in-process, so
    # ONE Keystone process): with tokens that expire within keystoneauth's 120 s every Placement request makes a token
    # issued and validated, which without the cache re-read the database (tests/README.md, "Where the time goes")
    { keystone_conf False "$EXPIRATION"; render "$ROOT/tests/support/minicloud/templates/keystone-cache.conf.in"; } \
        >"$ETC/keystone/keystone.conf"
    uwsgi_ini keystone "$KS_PORT" keystone.wsgi.api:application 1 "OS_KEYSTONE_CONFIG_DIR=$ETC/keystone"
}

# The venv's placement package copied to $S/patched with patches/placement/*.patch applied (uWSGI puts the
# directory first on sys.path); the venv itself is never changed (the mini-cloud shares it).
patched_overlay() {
    command -v patch >/dev/null 2>&1 || {
        [ "${PRODPLACEMENT_SKIP_INSTALL:-0}" = 1 ] && die "missing Debian package: patch"
        { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q patch; } >"$S/install-patch.log" 2>&1 \
            || die "apt-get install patch failed (see $S/install-patch.log)"
    }
    placement_patched_overlay
}

write_clouds() {
    local f=$S/clouds.yaml KEYSTONE_ENV=""
    ( umask 077; : >"$f" )
    chmod 600 "$f"
    if [ "$AUTH" = keystone ]; then
        { render "$T/clouds-keystone.yaml.in"; clouds_entry "$CLOUD" admin admin; } >"$f"
        KEYSTONE_ENV=$(render "$T/env-keystone.in")
    else
        render "$T/clouds-noauth2.yaml.in" >"$f"
    fi
    render "$T/env.in" >"$S/env"
}

# ---------------------------------------------------------------- MariaDB
start_mariadb() { mariadb_start "$DB_PORT"; }

create_databases() { mariadb_create_databases "$DB_PORT" 127.0.0.1 placement keystone; }

# ---------------------------------------------------------------- Keystone
register_placement() { keystone_register placement "placement:placement:$URL"; }

token_ok() {
    OS_CLIENT_CONFIG_FILE=$S/clouds.yaml "$PY" -c "import warnings; warnings.filterwarnings('ignore')
import openstack; openstack.connect(cloud='$CLOUD').authorize()"
}

# ---------------------------------------------------------------- commands
SERVICES=(placement keystone mariadb)

do_down() {
    local s
    for s in placement keystone; do stop "$s" 10 & done
    wait
    stop mariadb 20
    rm -f "$RUN"/*.pid 2>/dev/null || true
}

do_up() {
    mkdir -p "$S"
    if [ -d "$RUN" ] && ls "$RUN"/*.pid >/dev/null 2>&1; then
        say "stopping a previous prodplacement first"
        do_down
    fi
    do_install
    local p
    for p in "$DB_PORT" "$PORT" $([ "$AUTH" = keystone ] && echo "$KS_PORT"); do
        port_free "$p" || die "port $IP:$p is in use (set PRODPLACEMENT_DB_PORT / _PORT / _KEYSTONE_PORT)"
    done
    say "wiping $S"
    find "$S" -mindepth 1 -maxdepth 1 ! -name 'install-*.log' -exec rm -rf {} +
    mkdir -p "$ETC" "$LOG" "$RUN"
    start_mariadb
    write_configs
    write_clouds
    create_databases
    # Placement's migrations and start run beside Keystone's (it needs Keystone only to serve requests)
    "$VENV/bin/placement-manage" --config-file "$ETC/placement/placement.conf" db sync \
        >"$LOG/setup-placement.out" 2>&1 &
    local sync_pid=$!
    if [ "$AUTH" = keystone ]; then
        keystone_setup >"$LOG/setup-keystone.out" 2>&1 || fail_service setup-keystone "keystone setup failed"
    fi
    wait $sync_pid || fail_service setup-placement "placement-manage db sync failed"
    start placement "$VENV/bin/uwsgi" --ini "$ETC/uwsgi-placement.ini"
    if [ "$AUTH" = keystone ]; then
        start keystone "$VENV/bin/uwsgi" --ini "$ETC/uwsgi-keystone.ini"
        wait_for "keystone on $KS" 90 keystone http_ok "$KS/v3"
        register_placement >"$LOG/setup-catalog.out" 2>&1 || fail_service setup-catalog "catalog registration failed"
    fi
    wait_for "placement on $URL ($WORKERS workers, $AUTH, retry count $CONFLICT_RETRIES, $([ "$PATCHED" = 1 ] && echo patched || echo stock))" 90 placement http_ok "$URL/"
    [ "$AUTH" = keystone ] && wait_for "a keystone token (lifetime ${EXPIRATION}s)" 60 keystone token_ok
    say "up: OS_CLIENT_CONFIG_FILE=$S/clouds.yaml OS_CLOUD=$CLOUD (source $S/env)"
}

do_status() {
    local s rc=0 pid rss
    for s in "${SERVICES[@]}"; do
        if alive "$s"; then
            pid=$(cat "$RUN/$s.pid")
            rss=$(ps -o rss= -g "$pid" 2>/dev/null | awk '{s+=$1} END {printf "%d", s/1024}')
            printf '%-10s running  pid %-7s processes %-3s rss %5s MB\n' "$s" "$pid" \
                "$(ps -o pid= -g "$pid" 2>/dev/null | wc -l)" "$rss"
        elif [ "$s" = keystone ] && { [ ! -f "$S/env" ] || ! grep -q 'PRODPLACEMENT_AUTH=keystone' "$S/env"; }; then
            printf '%-10s not used (noauth2)\n' "$s"
        else
            printf '%-10s stopped\n' "$s"; rc=1
        fi
    done
    return $rc
}

cmd=${1:-}
case $cmd in
    up) do_up ;;
    down) do_down; say "stopped" ;;
    status) do_status ;;
    install) do_install ;;
    *) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
