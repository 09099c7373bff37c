# The shell library of the mini-cloud (tests/support/minicloud/cloud.sh, with its OVN variant ovn.sh) and the
# production-style Placement (tests/support/prodplacement/prodplacement.sh): logging, config templates, processes
# and uWSGI, the venv, MariaDB and Keystone. Sourced once the caller has set S (its state directory), VENV,
# SAY_TAG (the name in its log lines), IP and its database's DB_USER, DB_PASS and DB_PORT; sets PY, ETC, LOG,
# RUN and DBURL (SQLAlchemy's URL of that server, without the database) from them. The Keystone functions also
# read KS (Keystone's URL) and PASS (the admin's and the service users' password).
# shellcheck shell=bash disable=SC2034  # DBURL and the upper-case locals below: read by render, by the callers

LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=$VENV/bin/python
ETC=$S/etc
LOG=$S/log
RUN=$S/run
DBURL="mysql+pymysql://$DB_USER:$DB_PASS@$IP:$DB_PORT"

# ---------------------------------------------------------------- logging
T0=$(date +%s)
say() { printf '[%s %4ss] %s\n' "$SAY_TAG" "$(( $(date +%s) - T0 ))" "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- templates
# render TEMPLATE: the file with every ${NAME} (capitals, digits, underscores) replaced by the shell variable
# NAME's value, which may be a local of the caller and may hold several lines; an unset one is an error. Nothing
# else is expanded: any other `$` stays as written. (Bash only: envsubst is not on a fresh Debian.)
# shellcheck disable=SC2016  # '${' is the literal text looked for
render() {
    local t="" out="" name
    IFS= read -r -d '' t <"$1" || true
    while [[ $t == *'${'* ]]; do
        out+=${t%%'${'*}
        t=${t#*'${'}
        if [[ $t =~ ^([A-Z_][A-Z0-9_]*)\}(.*)$ ]]; then
            name=${BASH_REMATCH[1]}
            t=${BASH_REMATCH[2]}
            [ -n "${!name+set}" ] || die "render $1: \${$name} is not set"
            out+=${!name}
        else
            out+='${'
        fi
    done
    printf '%s' "$out$t"
}

# ---------------------------------------------------------------- processes
# start NAME cmd... : run in its own session/process group, stdout+stderr to $LOG/NAME.out, pid in $RUN/NAME.pid
start() {
    local name=$1; shift
    setsid "$@" </dev/null >"$LOG/$name.out" 2>&1 &
    echo $! >"$RUN/$name.pid"
}

alive() { local f=$RUN/$1.pid; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

# stop NAME [grace]: TERM the process group, KILL after grace
stop() {
    local name=$1 grace=${2:-15} f=$RUN/$1.pid pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    local t=$SECONDS
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        local i
        for ((i = 0; i < grace * 5; i++)); do
            kill -0 -- "-$pid" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 -- "-$pid" 2>/dev/null; then
            say "$name did not stop in ${grace}s: SIGKILL"
            kill -KILL -- "-$pid" 2>/dev/null || true
            # gone before we return: a restart binds the same port next
            for ((i = 0; i < 25; i++)); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.2; done
        fi
    fi
    [ $((SECONDS - t)) -ge 3 ] && say "stopped $name in $((SECONDS - t))s"
    rm -f "$f"
}

fail_service() {
    local name=$1 msg=${2:-failed}
    say "$name: $msg"
    for f in "$LOG/$name.log" "$LOG/$name.out"; do
        [ -s "$f" ] && { echo "----- tail $f" >&2; tail -n 40 "$f" >&2; }
    done
    exit 1
}

# wait_for DESC TIMEOUT SERVICE cmd... : poll cmd every 0.5 s; fail with SERVICE's log
wait_for() {
    local desc=$1 t=$2 svc=$3; shift 3
    local end=$(( $(date +%s) + t ))
    while ! "$@" >/dev/null 2>&1; do
        if [ -n "$svc" ]; then
            for s in $svc; do alive "$s" || fail_service "$s" "exited while waiting for: $desc"; done
        fi
        [ "$(date +%s)" -ge "$end" ] && fail_service "${svc%% *}" "timeout (${t}s) waiting for: $desc"
        sleep 0.5
    done
    say "ready: $desc"
}

http_ok() {  # any HTTP answer below 500
    "$PY" -c "import sys,urllib.request as u,urllib.error as e
try: u.urlopen(sys.argv[1], timeout=3)
except e.HTTPError as x: sys.exit(0 if x.code < 500 else 1)
except Exception: sys.exit(1)" "$1" 2>/dev/null
}

# uwsgi_ini NAME PORT MODULE PROCESSES ENV... : $ETC/uwsgi-NAME.ini; UWSGI_LISTEN (optional): the listen queue
uwsgi_ini() {
    local UWSGI_PORT=$2 UWSGI_MODULE=$3 UWSGI_PROCESSES=$4 name=$1 e; shift 4
    {
        render "$LIB/templates/uwsgi.ini.in"
        [ -n "${UWSGI_LISTEN:-}" ] && echo "listen = $UWSGI_LISTEN"
        for e in "$@"; do echo "env = $e"; done
    } >"$ETC/uwsgi-$name.ini"
}

# ---------------------------------------------------------------- the venv
# venv_has SPEC... : the venv's Python exists and has each distribution, SPEC being NAME (any version),
# NAME==VERSION, or NAME==PREFIX.* (e.g. glance==33.*)
venv_has() {
    [ -x "$PY" ] || return 1
    "$PY" - "$@" <<'PYEOF' 2>/dev/null
import importlib.metadata as m, sys
for spec in sys.argv[1:]:
    name, _, want = spec.partition('==')
    have = m.version(name)
    if want and not (have.startswith(want[:-1]) if want.endswith('.*') else have == want):
        sys.exit(1)
PYEOF
}

# venv_install CHECK LOGFILE CONSTRAINTS PIN... : unless CHECK (a command) succeeds, create the venv when missing
# and pip install the PINs (with the CONSTRAINTS file, when it exists); fail unless CHECK succeeds then
venv_install() {
    local check=$1 log=$2 constraints=$3 c=(); shift 3
    "$check" && return 0
    say "creating/updating venv $VENV (pip install through uv: lib/pip_install.sh)"
    [ -x "$PY" ] || python3 -m venv "$VENV" || die "python3 -m venv failed (apt-get install python3-venv?)"
    [ -f "$constraints" ] && c=(-c "$constraints")
    { "$LIB/pip_install.sh" "$VENV" -q -U pip wheel setuptools &&
      "$LIB/pip_install.sh" "$VENV" -q "${c[@]}" "$@"; } >"$log" 2>&1 \
        || { tail -30 "$log"; die "pip install failed"; }
    "$check" || die "venv still not right after pip install"
}

# ---------------------------------------------------------------- MariaDB
# mariadb_start PORT: a MariaDB of our own on IP:PORT, data in $S/mysql, socket and pid file in $RUN
mariadb_start() {
    mkdir -p "$S/mysql"
    mariadb-install-db --no-defaults --datadir="$S/mysql" --user=root --auth-root-authentication-method=normal \
        --skip-test-db >"$LOG/mariadb-install.out" 2>&1 || fail_service mariadb-install "mariadb-install-db failed"
    # production-like durability is not the point of a test server: no fsync per commit
    start mariadb mariadbd --no-defaults --datadir="$S/mysql" --user=root --bind-address="$IP" --port="$1" \
        --socket="$RUN/mysql.sock" --pid-file="$RUN/mariadbd.pid" --log-error="$LOG/mariadb.log" \
        --skip-name-resolve --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=0 \
        --innodb-doublewrite=0 --sync-binlog=0 --skip-log-bin --max-connections=1000 \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci
}

mariadb_sql() { mariadb --socket="$RUN/mysql.sock" -uroot "$@"; }

# mariadb_create_databases PORT "USER_HOST..." DB... : wait for MariaDB, then the user DB_USER (password DB_PASS)
# at each USER_HOST and the databases, each granted to it
mariadb_create_databases() {
    local port=$1 hosts=$2 h db sql=""; shift 2
    wait_for "mariadb on $IP:$port" 60 mariadb mariadb-admin --socket="$RUN/mysql.sock" -uroot ping
    for h in $hosts; do sql+="CREATE USER '$DB_USER'@'$h' IDENTIFIED BY '$DB_PASS'; "; done
    for db in "$@"; do
        sql+="CREATE DATABASE $db CHARACTER SET utf8mb4; "
        for h in $hosts; do sql+="GRANT ALL ON $db.* TO '$DB_USER'@'$h'; "; done
    done
    mariadb_sql -e "$sql" || fail_service mariadb "creating the databases failed"
}

# ---------------------------------------------------------------- Keystone
# keystone_conf DEBUG [TOKEN_EXPIRATION]: keystone.conf on stdout (a fernet Keystone on the database keystone)
keystone_conf() {
    local KEYSTONE_DEBUG=$1 KEYSTONE_TOKEN_OPTIONS="provider = fernet"
    [ -n "${2:-}" ] && KEYSTONE_TOKEN_OPTIONS+=$'\n'"expiration = $2"
    render "$LIB/templates/keystone.conf.in"
}

# placement_conf DEBUG AUTH_STRATEGY: the start of placement.conf (logging, auth, the database placement), on stdout
placement_conf() {
    local PLACEMENT_DEBUG=$1 PLACEMENT_AUTH_STRATEGY=$2
    render "$LIB/templates/placement.conf.in"
}

# service_auth SECTION USER: a keystoneauth password section (project service) for USER, on stdout
service_auth() {
    local AUTH_USER=$2
    printf '[%s]\n' "$1"
    render "$LIB/templates/service-auth.conf.in"
}

# keystone_authtoken USER: keystonemiddleware's section for a service running as USER, on stdout
keystone_authtoken() {
    local AUTH_USER=$1 SERVICE_AUTH
    SERVICE_AUTH=$(render "$LIB/templates/service-auth.conf.in")
    render "$LIB/templates/keystone_authtoken.conf.in"
}

# clouds_entry NAME USER PROJECT: one cloud of a clouds.yaml (password auth on Keystone $KS), on stdout
clouds_entry() {
    local CLOUD_NAME=$1 CLOUD_USER=$2 CLOUD_PROJECT=$3
    render "$LIB/templates/clouds-entry.yaml.in"
}

# keystone_setup: the database migrated, fernet and credential keys made, admin bootstrapped with its endpoints
keystone_setup() {
    local km=("$VENV/bin/keystone-manage" --config-file "$ETC/keystone/keystone.conf")
    "${km[@]}" db_sync
    "${km[@]}" fernet_setup --keystone-user root --keystone-group root
    "${km[@]}" credential_setup --keystone-user root --keystone-group root
    "${km[@]}" bootstrap --bootstrap-password "$PASS" --bootstrap-username admin \
        --bootstrap-project-name admin --bootstrap-role-name admin --bootstrap-service-name keystone \
        --bootstrap-region-id RegionOne --bootstrap-admin-url "$KS/v3" \
        --bootstrap-internal-url "$KS/v3" --bootstrap-public-url "$KS/v3"
}

# keystone_register SERVICE_USERS NAME:TYPE:URL... : the project service, the role service, each service user
# (password PASS, roles admin and service on project service) and each service with its three endpoints
keystone_register() {
    local users=$1; shift
    "$PY" "$LIB/register_catalog.py" "$KS/v3" "$PASS" "$users" "$@"
}

# ---------------------------------------------------------------- the production-style Placements (prodplacement, galera)
# port_free PORT: nothing listens on $IP:PORT
port_free() {
    "$PY" -c "import socket,sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try: s.bind(('$IP', int(sys.argv[1])))
except OSError: sys.exit(1)" "$1"
}

# placement_venv_ensure SKIP WHAT: the caller's venv_ok, else (unless SKIP is 1) the mini-cloud's venv installed
# into $VENV; WHAT names what venv_ok checks, for the error
placement_venv_ensure() {
    venv_ok && return 0
    [ "${1:-0}" = 1 ] && die "venv $VENV missing or wrong versions"
    say "installing the venv $VENV with tests/support/minicloud/cloud.sh install (the mini-cloud's pins; installs only)"
    MINICLOUD_VENV=$VENV bash "$ROOT/tests/support/minicloud/cloud.sh" install || die "tests/support/minicloud/cloud.sh install failed"
    venv_ok || die "venv $VENV still lacks $2"
}

# placement_patched_overlay: $S/patched/placement, the venv's openstack-placement with patches/placement/*.patch
# applied (the caller has made sure `patch` is installed); the uWSGI config puts it first on the path
placement_patched_overlay() {
    local site p
    site=$("$PY" -c 'import os, placement; print(os.path.dirname(os.path.dirname(placement.__file__)))')
    rm -rf "$S/patched"
    mkdir -p "$S/patched"
    cp -r "$site/placement" "$S/patched/placement"
    for p in "$ROOT"/patches/placement/*.patch; do
        patch -s -p1 -d "$S/patched" <"$p" || die "patch $p does not apply to $site/placement"
    done
    # shellcheck disable=SC2012
    say "placement patched: $(cd "$ROOT" && ls patches/placement/*.patch | tr '\n' ' ')"
}
