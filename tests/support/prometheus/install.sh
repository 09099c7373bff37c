#!/usr/bin/env bash
# Debian's prometheus (the server and promtool) for tests/functional/test_exporter.py: installed when missing.
set -euo pipefail
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    exit 0
fi
for attempt in 1 2 3 4 5 6; do  # another apt-get may hold the dpkg lock for a while
    if { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; } \
            >/tmp/minbw-prometheus-install.log 2>&1; then
        exit 0
    fi
    sleep $((attempt * 10))
done
tail -20 /tmp/minbw-prometheus-install.log >&2
echo "apt-get install prometheus failed" >&2
exit 1
