#!/usr/bin/env bash
# Screenshots of built documentation pages, as a browser shows them (Debian's Chromium, headless; installed
# here when missing). Usage: docs/site/screenshot.sh OUT_DIR PAGE...   (PAGE relative to build/docs/html,
# e.g. index.html or collections/minbw/openstack/port_module.html; one OUT_DIR/NAME.png per page)
# Set WIDTH / HEIGHT for the window (default 1280x2000).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
html=${MINBW_DOCS_HTML:-$repo/build/docs/html}
out=$1
shift
if ! command -v chromium >/dev/null; then
    for attempt in 1 2 3; do  # another apt run may hold the dpkg lock
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } && break
        sleep 20
    done
fi
mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
for page in "$@"; do
    name=$(echo "${page%.html}" | tr '/#' '__')
    # the flags: no sandbox as root, and no background connections (this machine reaches no outside host)
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
        --window-size="${WIDTH:-1280},${HEIGHT:-2000}" --screenshot="$out/$name.png" "file://$html/$page" \
        >/dev/null 2>&1
    echo "$out/$name.png"
done
