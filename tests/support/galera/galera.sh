#!/usr/bin/env bash
# galera: Placement as production deployments run it, on one machine, for minbw's tests and benchmarks.
#
# Three MariaDB nodes in one Galera cluster (Debian's mariadb-server and galera-4: each its own datadir, port,
# gcomm, IST and SST addresses; SST by rsync), two Placement API processes (the real openstack-placement 16.0.0
# under uWSGI, as tests/support/prodplacement does, each with its own placement.conf) and HAProxy (Debian's) in
# front of both, as kolla-ansible configures it: Placement's database connection goes through HAProxy's
# mariadb frontend, clients through its placement_api frontend. noauth2. Nothing is shared with the mini-cloud
# or prodplacement: other ports, other state directory (the venv, .venv-cloud, is the mini-cloud's).
#
#   galera.sh up       wipe state, install if needed, bootstrap the cluster, configure, start, wait until ready
#   galera.sh down     stop every process (own pid files / process groups)
#   galera.sh status   one line per process, then each node's wsrep state and HAProxy's view; exit 1 when one
#                      is not running
#   galera.sh install  only install (apt: mariadb-server galera-4 haproxy rsync; the venv); idempotent
#   galera.sh kill-node N   SIGKILL Galera node N (1-3), as a crash would (for the tests)
#   galera.sh start-node N  start node N again: it rejoins (IST from a donor's gcache, else SST), wait until Synced
#   galera.sh kill-api A    SIGKILL Placement API process A (1-2): its uWSGI master and workers, as a crash would
#   galera.sh start-api A   start API process A again (its request log appended to), wait until it answers and
#                           HAProxy has it UP
#
# Env:
#   GALERA_STATE=dir                 state, config, logs, pid files (default .state/galera)
#   GALERA_VENV=dir                  the venv (default .venv-cloud, the mini-cloud's)
#   GALERA_MODE=single-writer        single-writer: HAProxy sends every connection to node 1, nodes 2 and 3 are
#                                    `backup` (kolla-ansible's default); multi-writer: round robin over all three
#   GALERA_WORKERS=2                 uWSGI worker processes of each of the two Placement API processes
#   GALERA_CONFLICT_RETRIES=10       Placement's [placement] allocation_conflict_retry_count (upstream's default)
#   GALERA_PATCHED=0                 1: Placement with patches/placement/*.patch applied, as an overlay of the venv's
#                                    placement package in $GALERA_STATE/patched (as prodplacement.sh does)
#   GALERA_DEBUG=True                Placement's debug log (its retries of allocation writes and oslo.db's deadlock
#                                    retries are logged at debug level only); False to turn it off
#   GALERA_NODE_PORTS="23306 23307 23308"   the three nodes' MariaDB ports
#   GALERA_GCOMM_PORTS="24567 24568 24569"  their Galera replication (gmcast) ports
#   GALERA_IST_PORTS="24577 24578 24579"    their incremental state transfer ports
#   GALERA_SST_PORTS="24587 24588 24589"    their state snapshot transfer (rsync) ports
#   GALERA_DB_PORT=23406             HAProxy's mariadb frontend (what Placement connects to)
#   GALERA_API_PORTS="28781 28782"   the two Placement API processes
#   GALERA_PORT=28778                HAProxy's placement_api frontend (what clients use)
#   GALERA_DB_CHECK=clustercheck     HAProxy's check of the mariadb members: clustercheck: `option httpchk` against a
#                                    responder per node (tests/support/galera/clustercheck.py: 200 only when the node
#                                    is Synced and wsrep_ready), `on-marked-down shutdown-sessions` (a member marked
#                                    DOWN: its connections cut) and `on-marked-up shutdown-backup-sessions` (node 1 UP
#                                    again: the backups' connections cut); mysql: `option mysql-check` (a login as the
#                                    user haproxy: the handshake only), the same shutdowns;
#                                    tcp: a TCP connect (the kernel completes it for a stopped mariadbd), no shutdown
#                                    (docs/galera.md, "HAProxy's check of the Galera nodes")
#   GALERA_SYNC_WAIT=1               wsrep_sync_wait of Placement's database connections (pymysql's init_command in
#                                    its connection URL): 1 makes each read wait until the node has applied what the
#                                    cluster committed before it (causal reads: no stale read from a writer that was
#                                    frozen past its eviction); 0: MariaDB's default
#   GALERA_CHECK_PORTS="24597 24598 24599"  the three nodes' clustercheck responders (GALERA_DB_CHECK=clustercheck)
#   GALERA_DATADIR_SIZE_MB=          each node's datadir on a file system of its own of this many MB (an ext4
#                                    image, $GALERA_STATE/disk-N.img, loop-mounted; at least 256: a datadir takes
#                                    about 190 MB, the 96 MB redo log and the 64 MB gcache), for the disk-full fault
#                                    (tests/support/galera/faults.py); unset: the datadirs are plain directories
#   GALERA_SKIP_INSTALL=1            never run apt/pip (fail if something is missing)
#
# Client: OS_CLIENT_CONFIG_FILE=$GALERA_STATE/clouds.yaml OS_CLOUD=galera (or: source $GALERA_STATE/env).
# shellcheck disable=SC2034  # the upper-case variables of the templates are read by render (lib/common.sh)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
S=$(realpath -m "${GALERA_STATE:-$ROOT/.state/galera}")
VENV=$(realpath -m "${GALERA_VENV:-$ROOT/.venv-cloud}")
MODE=${GALERA_MODE:-single-writer}
WORKERS=${GALERA_WORKERS:-2}
CONFLICT_RETRIES=${GALERA_CONFLICT_RETRIES:-10}
PATCHED=${GALERA_PATCHED:-0}
DEBUG=${GALERA_DEBUG:-True}
DATADIR_SIZE_MB=${GALERA_DATADIR_SIZE_MB:-}
DB_CHECK=${GALERA_DB_CHECK:-clustercheck}
SYNC_WAIT=${GALERA_SYNC_WAIT:-1}
IP=127.0.0.1
read -r -a NODE_PORT_LIST <<<"${GALERA_NODE_PORTS:-23306 23307 23308}"
read -r -a GCOMM_PORT_LIST <<<"${GALERA_GCOMM_PORTS:-24567 24568 24569}"
read -r -a IST_PORT_LIST <<<"${GALERA_IST_PORTS:-24577 24578 24579}"
read -r -a SST_PORT_LIST <<<"${GALERA_SST_PORTS:-24587 24588 24589}"
read -r -a API_PORT_LIST <<<"${GALERA_API_PORTS:-28781 28782}"
read -r -a CHECK_PORT_LIST <<<"${GALERA_CHECK_PORTS:-24597 24598 24599}"
DB_PORT=${GALERA_DB_PORT:-23406}
PORT=${GALERA_PORT:-28778}
URL="http://$IP:$PORT"
NODE_PORTS="${NODE_PORT_LIST[*]}"
DB_USER=placement
DB_PASS=galera-db
CLOUD=galera
# the library: PY, ETC, LOG, RUN (from S and VENV), DBURL (through HAProxy: DB_PORT); logging (say, die),
# templates (render), processes (start, alive, stop, fail_service, wait_for, http_ok, uwsgi_ini), the venv
SAY_TAG=galera
UWSGI_LISTEN=128  # the listen queue of the uWSGI servers, for many concurrent clients
# shellcheck source=../lib/common.sh
. "$ROOT/tests/support/lib/common.sh"
T=$HERE/templates  # the configuration templates (render)
NODES=(1 2 3)
APIS=(1 2)

case $MODE in single-writer|multi-writer) ;; *) echo "GALERA_MODE must be single-writer or multi-writer, got '$MODE'" >&2; exit 2;; esac
case $DB_CHECK in clustercheck|mysql|tcp) ;; *) echo "GALERA_DB_CHECK must be clustercheck, mysql or tcp, got '$DB_CHECK'" >&2; exit 2;; esac
[[ $SYNC_WAIT =~ ^([0-9]|1[0-5])$ ]] || { echo "GALERA_SYNC_WAIT must be a wsrep_sync_wait bit mask, 0 to 15, got '$SYNC_WAIT'" >&2; exit 2; }
case $PATCHED in 0|1) ;; *) echo "GALERA_PATCHED must be 0 or 1, got '$PATCHED'" >&2; exit 2;; esac
case $DEBUG in True|False) ;; *) echo "GALERA_DEBUG must be True or False, got '$DEBUG'" >&2; exit 2;; esac
[[ $WORKERS =~ ^[1-9][0-9]*$ ]] || { echo "GALERA_WORKERS must be a positive number, got '$WORKERS'" >&2; exit 2; }
[ -z "$DATADIR_SIZE_MB" ] || { [[ $DATADIR_SIZE_MB =~ ^[1-9][0-9]*$ ]] && [ "$DATADIR_SIZE_MB" -ge 256 ]; } \
    || { echo "GALERA_DATADIR_SIZE_MB must be a number of MB, at least 256 (a datadir takes about 190 MB), got '$DATADIR_SIZE_MB'" >&2; exit 2; }
[[ $CONFLICT_RETRIES =~ ^[1-9][0-9]*$ ]] || { echo "GALERA_CONFLICT_RETRIES must be a positive number, got '$CONFLICT_RETRIES'" >&2; exit 2; }
three_ports() { [ $# -eq 4 ] || { echo "GALERA_$1 must be three ports, got '${*:2}'" >&2; exit 2; }; }
three_ports NODE_PORTS "${NODE_PORT_LIST[@]}"
three_ports GCOMM_PORTS "${GCOMM_PORT_LIST[@]}"
three_ports IST_PORTS "${IST_PORT_LIST[@]}"
three_ports SST_PORTS "${SST_PORT_LIST[@]}"
three_ports CHECK_PORTS "${CHECK_PORT_LIST[@]}"
[ ${#API_PORT_LIST[@]} -eq 2 ] || { echo "GALERA_API_PORTS must be two ports, got '${API_PORT_LIST[*]}'" >&2; exit 2; }
ALL_PORTS=("${NODE_PORT_LIST[@]}" "${GCOMM_PORT_LIST[@]}" "${IST_PORT_LIST[@]}" "${SST_PORT_LIST[@]}"
           "${API_PORT_LIST[@]}" "$DB_PORT" "$PORT" "${CHECK_PORT_LIST[@]}")
for p in "${ALL_PORTS[@]}"; do
    [[ $p =~ ^[0-9]+$ ]] && [ "$p" -gt 0 ] && [ "$p" -lt 65536 ] || { echo "bad port '$p'" >&2; exit 2; }
done
[ "$(printf '%s\n' "${ALL_PORTS[@]}" | sort -u | wc -l)" -eq ${#ALL_PORTS[@]} ] \
    || { echo "the ports must differ: ${ALL_PORTS[*]}" >&2; exit 2; }

# ---------------------------------------------------------------- install
venv_ok() { venv_has openstack-placement==16.0.0 pymysql uwsgi; }

apt_install() {  # apt_install PACKAGE...: unless GALERA_SKIP_INSTALL=1
    [ "${GALERA_SKIP_INSTALL:-0}" = 1 ] && die "missing Debian packages: $*"
    say "apt-get install $*"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" ||
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"; }; } \
        >>"$S/install-apt.log" 2>&1 || { tail -20 "$S/install-apt.log" >&2; die "apt-get install $* failed"; }
}

do_install() {
    mkdir -p "$S"
    local need=()
    command -v mariadbd >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 || need+=(mariadb-server)
    [ -f /usr/lib/galera/libgalera_smm.so ] || need+=(galera-4)
    command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
    command -v rsync >/dev/null 2>&1 || need+=(rsync)       # the SST method
    command -v ss >/dev/null 2>&1 || command -v lsof >/dev/null 2>&1 || need+=(iproute2)   # wsrep_sst_rsync's port check
    [ "$PATCHED" = 1 ] && { command -v patch >/dev/null 2>&1 || need+=(patch); }
    [ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
    placement_venv_ensure "${GALERA_SKIP_INSTALL:-0}" "openstack-placement 16.0.0 / uwsgi / pymysql"
}

# ---------------------------------------------------------------- Galera
node_sql() { local n=$1; shift; mariadb --socket="$RUN/mysql-$n.sock" -uroot "$@"; }

# node_status N NAME: the value of wsrep status variable NAME on node N
node_status() { node_sql "$1" -N -B -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2; }

node_synced() {  # node_synced N: node N is Synced in a primary component of 3
    [ "$(node_status "$1" wsrep_local_state_comment)" = Synced ] &&
    [ "$(node_status "$1" wsrep_cluster_size)" = 3 ] &&
    [ "$(node_status "$1" wsrep_cluster_status)" = Primary ]
}

node_config() {  # node_config N: $ETC/galera-N.cnf
    local NODE=$1 i=$(($1 - 1)) GCOMM_PEERS="" p
    local NODE_DIR=$S/mysql-$1 NODE_PORT=${NODE_PORT_LIST[$i]} NODE_GCOMM_PORT=${GCOMM_PORT_LIST[$i]}
    local NODE_IST_PORT=${IST_PORT_LIST[$i]} NODE_SST_PORT=${SST_PORT_LIST[$i]}
    for p in "${GCOMM_PORT_LIST[@]}"; do GCOMM_PEERS+="${GCOMM_PEERS:+,}$IP:$p"; done
    render "$T/galera-node.cnf.in" >"$ETC/galera-$1.cnf"
}

# node_start N [--wsrep-new-cluster]: mariadbd of node N in its own process group (service name galera-N)
node_start() {
    local n=$1; shift
    start "galera-$n" mariadbd --defaults-file="$ETC/galera-$n.cnf" "$@"
}

# datadir_mount N: node N's datadir on an ext4 file system of its own, DATADIR_SIZE_MB large (a loop-mounted image),
# when GALERA_DATADIR_SIZE_MB is set: the disk of one node can then be filled (tests/support/galera/faults.py)
datadir_mount() {
    local n=$1 img=$S/disk-$1.img
    [ -n "$DATADIR_SIZE_MB" ] || return 0
    truncate -s "${DATADIR_SIZE_MB}M" "$img"
    mkfs.ext4 -q -F -m 0 "$img" >>"$LOG/datadir-mount.out" 2>&1 || fail_service datadir-mount "mkfs.ext4 $img failed"
    mount -o loop "$img" "$S/mysql-$n" >>"$LOG/datadir-mount.out" 2>&1 \
        || fail_service datadir-mount "mounting $img on $S/mysql-$n failed (loop devices, mount: root only)"
    rmdir "$S/mysql-$n/lost+found"   # MariaDB would take it for a database, and rsync (SST) cannot read it
}

# datadirs_unmount: the file systems datadir_mount made (their loop devices go with them: mount -o loop's autoclear)
datadirs_unmount() {
    local n
    for n in "${NODES[@]}"; do
        if mountpoint -q "$S/mysql-$n" 2>/dev/null; then umount "$S/mysql-$n" || umount -l "$S/mysql-$n"; fi
    done
}

start_cluster() {
    local n
    for n in "${NODES[@]}"; do mkdir -p "$S/mysql-$n"; datadir_mount "$n"; node_config "$n"; done
    # the joiner's rsync daemon of wsrep_sst_rsync, started by root, runs as nobody (rsyncd's default uid, which
    # the script does not set): the joiners' datadirs are its (mariadbd, root, reads and writes them all the same);
    # the state directory's parents must let nobody through (not a 0700 directory such as pytest's)
    chown nobody:nogroup "$S/mysql-2" "$S/mysql-3"
    setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$S/mysql-2" \
        || die "$S: the user nobody cannot reach it (a parent directory is not world-searchable), and the state transfer (rsync) runs as nobody"
    # node 1 is initialised and bootstraps the cluster; nodes 2 and 3 start empty and receive its state by SST
    mariadb-install-db --no-defaults --datadir="$S/mysql-1" --user=root --auth-root-authentication-method=normal \
        --skip-test-db >"$LOG/mariadb-install.out" 2>&1 || fail_service mariadb-install "mariadb-install-db failed"
    node_start 1 --wsrep-new-cluster
    wait_for "galera node 1 bootstrapped (Primary, Synced)" 90 galera-1 \
        eval '[ "$(node_status 1 wsrep_local_state_comment)" = Synced ] && [ "$(node_status 1 wsrep_cluster_status)" = Primary ]'
    # one joiner at a time: node 1 is the donor of each state transfer
    for n in 2 3; do
        node_start "$n"
        wait_for "galera node $n joined (SST from node 1)" 180 "galera-$n galera-1" \
            eval "[ \"\$(node_status $n wsrep_local_state_comment)\" = Synced ]"
    done
    for n in "${NODES[@]}"; do
        wait_for "galera node $n: Synced, cluster size 3, Primary" 60 "galera-$n" node_synced "$n"
    done
}

# The user placement (at 127.0.0.1: HAProxy connects from there) and the database, made on node 1 (replicated)
create_database() {
    node_sql 1 -e "CREATE USER '$DB_USER'@'$IP' IDENTIFIED BY '$DB_PASS'; CREATE USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE DATABASE placement CHARACTER SET utf8mb4;
GRANT ALL ON placement.* TO '$DB_USER'@'$IP'; GRANT ALL ON placement.* TO '$DB_USER'@'localhost';
CREATE USER 'haproxy'@'$IP';" \
        || fail_service galera-1 "creating the database failed"
}

# ---------------------------------------------------------------- configuration
# HAProxy's member lines: the three nodes (single-writer: 2 and 3 are backups) and the two API processes
# the mariadb members' check (GALERA_DB_CHECK): DB_CHECK_OPTIONS in the listen section, each server's extra words
write_haproxy() {
    local DB_SERVERS="" API_SERVERS="" DB_CHECK_OPTIONS="" n a backup extra=""
    case $DB_CHECK in
        clustercheck) DB_CHECK_OPTIONS=$'    option httpchk GET /\n    http-check expect status 200'
                      extra=" on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions" ;;
        mysql) DB_CHECK_OPTIONS="    option mysql-check user haproxy post-41"
               extra=" on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions" ;;
        tcp) DB_CHECK_OPTIONS="    # the check: a TCP connect" ;;
    esac
    for n in "${NODES[@]}"; do
        backup=""
        [ "$MODE" = single-writer ] && [ "$n" != 1 ] && backup=" backup"
        [ "$DB_CHECK" = clustercheck ] && backup=" port ${CHECK_PORT_LIST[$((n - 1))]}$backup"
        DB_SERVERS+="    server node$n $IP:${NODE_PORT_LIST[$((n - 1))]} check inter 2000 rise 2 fall 5$extra$backup"$'\n'
    done
    for a in "${APIS[@]}"; do
        API_SERVERS+="    server api$a $IP:${API_PORT_LIST[$((a - 1))]} check inter 2000 rise 2 fall 5"$'\n'
    done
    render "$T/haproxy.cfg.in" >"$ETC/haproxy.cfg"
    haproxy -c -q -f "$ETC/haproxy.cfg" >"$LOG/haproxy-check.out" 2>&1 || fail_service haproxy-check "haproxy.cfg is not valid"
}

# placement-A: its own config dir (placement.conf logging to $LOG/placement-A/placement.log) and uWSGI ini
write_placement() {
    local a=$1 LOG=$LOG/placement-$a
    mkdir -p "$ETC/placement-$a" "$LOG"
    {
        placement_conf "$DEBUG" noauth2
        render "$ROOT/tests/support/prodplacement/templates/placement-retries.conf.in"
    } >"$ETC/placement-$a/placement.conf"
    LOG=${LOG%/*}
    if [ "$SYNC_WAIT" != 0 ]; then   # pymysql's init_command, through SQLAlchemy's URL: Placement's connections only
        sed -i "s|^connection = \(.*/placement\)\$|connection = \1?init_command=SET%20SESSION%20wsrep_sync_wait%3D$SYNC_WAIT|" \
            "$ETC/placement-$a/placement.conf"
        grep -q "wsrep_sync_wait%3D$SYNC_WAIT" "$ETC/placement-$a/placement.conf" || fail_service setup-placement "wsrep_sync_wait not set"
    fi
    uwsgi_ini "placement-$a" "${API_PORT_LIST[$((a - 1))]}" placement.wsgi.api:application "$WORKERS" \
        "OS_PLACEMENT_CONFIG_DIR=$ETC/placement-$a"
    [ "$PATCHED" = 1 ] && echo "pythonpath = $S/patched" >>"$ETC/uwsgi-placement-$a.ini"
    return 0
}

# The venv's placement package copied to $S/patched with patches/placement/*.patch applied (uWSGI puts the
# directory first on sys.path); the venv itself is never changed (the mini-cloud shares it). As prodplacement.sh.
write_clouds() {
    local f=$S/clouds.yaml
    ( umask 077; : >"$f" )
    chmod 600 "$f"
    render "$T/clouds.yaml.in" >"$f"
    render "$T/env.in" >"$S/env"
}

# haproxy_servers: one line per server of HAProxy's proxies (its stats socket's `show stat`):
# PROXY SERVER STATUS active|backup, e.g. "mariadb node2 UP backup"
haproxy_servers() {
    echo "show stat" | "$PY" -c "import socket,sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())
data = b''
while chunk := s.recv(65536): data += chunk
lines = data.decode().splitlines()
head = lines[0].lstrip('# ').split(',')
for line in lines[1:]:
    f = dict(zip(head, line.split(',')))
    if f.get('svname') not in (None, 'FRONTEND', 'BACKEND'):
        print(f'{f[\"pxname\"]:<14}{f[\"svname\"]:<7}{f[\"status\"]:<8}{\"backup\" if f[\"bck\"] == \"1\" else \"active\"}')" \
        "$RUN/haproxy.sock"
}

# haproxy_all_up: every server UP (not DOWN, nor in transition: "UP 1/3")
haproxy_all_up() {
    local out
    out=$(haproxy_servers) && [ -n "$out" ] && awk 'NF != 4 || $3 != "UP" {bad = 1} END {exit bad}' <<<"$out"
}

# ---------------------------------------------------------------- commands
SERVICES=(haproxy placement-1 placement-2 galera-1 galera-2 galera-3)
[ "$DB_CHECK" = clustercheck ] && SERVICES+=(clustercheck-1 clustercheck-2 clustercheck-3)

# clustercheck N: node N's health responder for HAProxy's httpchk (GALERA_DB_CHECK=clustercheck)
clustercheck_start() {
    start "clustercheck-$1" "$PY" "$HERE/clustercheck.py" --socket "$RUN/mysql-$1.sock" --port "${CHECK_PORT_LIST[$(($1 - 1))]}"
}

do_down() {
    local s
    for s in haproxy placement-1 placement-2 clustercheck-1 clustercheck-2 clustercheck-3; do stop "$s" 10 & done
    wait
    # the joiners first, node 1 last: its grastate.dat then says it is safe to bootstrap from (not needed here:
    # every up starts from a wiped state)
    for s in galera-3 galera-2; do stop "$s" 30 & done
    wait
    stop galera-1 30
    rm -f "$RUN"/*.pid 2>/dev/null || true
    datadirs_unmount
}

do_up() {
    mkdir -p "$S"
    if [ -d "$RUN" ] && ls "$RUN"/*.pid >/dev/null 2>&1; then
        say "stopping a previous galera first"
        do_down
    fi
    do_install
    local p a
    for p in "${ALL_PORTS[@]}"; do
        port_free "$p" || die "port $IP:$p is in use (set GALERA_*_PORTS / GALERA_DB_PORT / GALERA_PORT)"
    done
    say "wiping $S"
    datadirs_unmount
    find "$S" -mindepth 1 -maxdepth 1 ! -name 'install-*.log' -exec rm -rf {} +
    mkdir -p "$ETC" "$LOG" "$RUN"
    start_cluster
    write_haproxy
    create_database
    if [ "$DB_CHECK" = clustercheck ]; then
        for n in "${NODES[@]}"; do clustercheck_start "$n"; done
        for n in "${NODES[@]}"; do
            wait_for "clustercheck-$n on $IP:${CHECK_PORT_LIST[$((n - 1))]}" 30 "clustercheck-$n" \
                http_ok "http://$IP:${CHECK_PORT_LIST[$((n - 1))]}/"
        done
    fi
    start haproxy haproxy -db -f "$ETC/haproxy.cfg"
    wait_for "haproxy's mariadb frontend on $IP:$DB_PORT ($MODE)" 30 haproxy \
        mariadb -h "$IP" -P "$DB_PORT" -u"$DB_USER" -p"$DB_PASS" placement -e 'SELECT 1'
    [ "$PATCHED" = 1 ] && placement_patched_overlay
    for a in "${APIS[@]}"; do write_placement "$a"; done
    write_clouds
    "$VENV/bin/placement-manage" --config-file "$ETC/placement-1/placement.conf" db sync \
        >"$LOG/setup-placement.out" 2>&1 || fail_service setup-placement "placement-manage db sync failed"
    for a in "${APIS[@]}"; do start "placement-$a" "$VENV/bin/uwsgi" --ini "$ETC/uwsgi-placement-$a.ini"; done
    for a in "${APIS[@]}"; do
        wait_for "placement-$a on $IP:${API_PORT_LIST[$((a - 1))]}" 90 "placement-$a" http_ok "http://$IP:${API_PORT_LIST[$((a - 1))]}/"
    done
    wait_for "placement on $URL through haproxy (2 x $WORKERS workers, $MODE, db check $DB_CHECK, wsrep_sync_wait $SYNC_WAIT, retry count $CONFLICT_RETRIES, $([ "$PATCHED" = 1 ] && echo patched || echo stock))" \
        60 haproxy http_ok "$URL/"
    wait_for "haproxy: every server UP (its checks: every 2 s, rise 2)" 60 haproxy haproxy_all_up
    say "up: OS_CLIENT_CONFIG_FILE=$S/clouds.yaml OS_CLOUD=$CLOUD (source $S/env)"
}

do_status() {
    local s rc=0 pid rss n
    for s in "${SERVICES[@]}"; do
        if alive "$s"; then
            pid=$(cat "$RUN/$s.pid")
            rss=$(ps -o rss= -g "$pid" 2>/dev/null | awk '{s+=$1} END {printf "%d", s/1024}')
            printf '%-12s running  pid %-7s processes %-3s rss %5s MB\n' "$s" "$pid" \
                "$(ps -o pid= -g "$pid" 2>/dev/null | wc -l)" "$rss"
        else
            printf '%-12s stopped\n' "$s"; rc=1
        fi
    done
    for n in "${NODES[@]}"; do
        alive "galera-$n" || continue
        printf 'node%s  %s, cluster size %s, %s\n' "$n" "$(node_status "$n" wsrep_local_state_comment)" \
            "$(node_status "$n" wsrep_cluster_size)" "$(node_status "$n" wsrep_cluster_status)"
    done
    alive haproxy && [ -S "$RUN/haproxy.sock" ] && haproxy_servers | sed 's/^/haproxy /'
    return $rc
}

do_kill_node() {
    local n=${1:-}
    case $n in 1|2|3) ;; *) die "kill-node N: N is 1, 2 or 3" ;; esac
    alive "galera-$n" || die "galera-$n is not running"
    kill -KILL -- "-$(cat "$RUN/galera-$n.pid")"
    say "galera-$n killed (SIGKILL)"
}

do_start_node() {
    local n=${1:-}
    case $n in 1|2|3) ;; *) die "start-node N: N is 1, 2 or 3" ;; esac
    alive "galera-$n" && die "galera-$n is running"
    # as Debian's galera_recovery does before a start: the position the node's InnoDB holds (after a crash its
    # grastate.dat says seqno -1), so that it asks for an incremental transfer (IST) of what it missed
    local pos
    mariadbd --defaults-file="$ETC/galera-$n.cnf" --wsrep-recover --log-error="$LOG/mariadb-$n-recover.log" \
        >"$LOG/galera-$n-recover.out" 2>&1 || fail_service "galera-$n-recover" "mariadbd --wsrep-recover failed"
    pos=$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' "$LOG/mariadb-$n-recover.log" | tail -1)
    # a full state transfer (SST) instead, when the donors' gcache lacks the history: rsync writes as nobody
    chown -R nobody:nogroup "$S/mysql-$n"
    say "galera-$n: recovered position ${pos:-unknown}"
    node_start "$n" ${pos:+"--wsrep-start-position=$pos"}
    wait_for "galera node $n rejoined: Synced, cluster size 3, Primary" 180 "galera-$n" node_synced "$n"
}

do_kill_api() {
    local a=${1:-}
    case $a in 1|2) ;; *) die "kill-api A: A is 1 or 2" ;; esac
    alive "placement-$a" || die "placement-$a is not running"
    kill -KILL -- "-$(cat "$RUN/placement-$a.pid")"
    say "placement-$a killed (SIGKILL, master and workers)"
}

do_start_api() {
    local a=${1:-}
    case $a in 1|2) ;; *) die "start-api A: A is 1 or 2" ;; esac
    alive "placement-$a" && die "placement-$a is running"
    # as start (lib/common.sh), but appending to the request log: log_counts() reads it whole
    setsid "$VENV/bin/uwsgi" --ini "$ETC/uwsgi-placement-$a.ini" </dev/null >>"$LOG/placement-$a.out" 2>&1 &
    echo $! >"$RUN/placement-$a.pid"
    wait_for "placement-$a on $IP:${API_PORT_LIST[$((a - 1))]}" 90 "placement-$a" http_ok "http://$IP:${API_PORT_LIST[$((a - 1))]}/"
    wait_for "haproxy: api$a UP again (rise 2)" 60 haproxy haproxy_all_up
}

cmd=${1:-}
case $cmd in
    up) do_up ;;
    down) do_down; say "stopped" ;;
    status) do_status ;;
    install) do_install ;;
    kill-node) do_kill_node "${2:-}" ;;
    start-node) do_start_node "${2:-}" ;;
    kill-api) do_kill_api "${2:-}" ;;
    start-api) do_start_api "${2:-}" ;;
    *) sed -n '2,56p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
