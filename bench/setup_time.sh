#!/usr/bin/env bash
# The set-up of `make test` (make setup collection cloud-install tour-venv) timed from a fresh clone, step by
# step: each recipe line of the Makefile runs under GNU time (wall, user and system CPU of it and its children).
#   bench/setup_time.sh REF CLONE HOME_DIR OUT [MAKE_ARGS...]
# clones this repository's REF into CLONE (removed first), runs `make MAKE_ARGS` (default: the four set-up targets)
# there with HOME=HOME_DIR (a fresh HOME_DIR: pip's and uv's caches empty; the same one again: warm), and appends
# to OUT: the load average before and after, one line per recipe line (wall s, user s, sys s, the line), the total.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
ref=$1 clone=$2 home=$3 out=$4; shift 4
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=(setup collection cloud-install tour-venv)
rm -rf "$clone"
git clone -q "$repo" "$clone"
git -C "$clone" checkout -q "$ref"
mkdir -p "$home"
steps=$(mktemp)
shell=$(mktemp)
# the Makefile's SHELL, each recipe line timed
cat >"$shell" <<SH
#!/bin/bash
exec /usr/bin/time -a -o "$steps" -f '%e	%U	%S	%C' /bin/bash "\$@"
SH
chmod +x "$shell"
{
    echo "## $(date -u '+%F %T') UTC: make ${targets[*]} in a fresh clone of $ref ($(git -C "$clone" rev-parse --short HEAD)), HOME=$home ($(du -sh "$home/.cache" 2>/dev/null | cut -f1 || echo 0) of caches)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$out"
start=$(date +%s.%N)
rc=0
env HOME="$home" /usr/bin/time -o "$steps.total" -f '%e	%U	%S	TOTAL' make -C "$clone" SHELL="$shell" "${targets[@]}" \
    >"$out.make.log" 2>&1 || rc=$?
{
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); make exit $rc"
    echo '```'
    printf 'wall s\tuser s\tsys s\tstep\n'
    sed "s#$clone#CLONE#g; s#/bin/bash -c ##" "$steps" | cut -c1-200
    cat "$steps.total"
    echo '```'
} >>"$out"
rm -f "$steps" "$steps.total" "$shell"
echo "$(date +%s.%N) $start" | awk '{printf "wall %.0f s\n", $1 - $2}'
exit $rc
