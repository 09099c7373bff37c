# Process and uWSGI helpers shared by tests/support/minicloud/cloud.sh and tests/support/prodplacement/prodplacement.sh.
# Sourced after the caller has set LOG, RUN, ETC, IP, VENV, PY and defined say().
# shellcheck shell=bash

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

# UWSGI_LISTEN (optional): the listen queue
uwsgi_ini() {  # uwsgi_ini NAME PORT MODULE PROCESSES ENV...
    local name=$1 port=$2 module=$3 procs=$4; shift 4
    {
        cat <<EOF
[uwsgi]
http-socket = $IP:$port
module = $module
home = $VENV
master = true
processes = $procs
threads = 1
enable-threads = true
lazy-apps = true
die-on-term = true
hook-master-start = unix_signal:15 gracefully_kill_them_all
worker-reload-mercy = 5
buffer-size = 65535
add-header = Connection: close
http-keepalive = false
need-app = true
EOF
        [ -n "${UWSGI_LISTEN:-}" ] && echo "listen = $UWSGI_LISTEN"
        for e in "$@"; do echo "env = $e"; done
    } >"$ETC/uwsgi-$name.ini"
}
