#!/usr/bin/env bash
# The image of contrib/container/Containerfile, built with buildah (no daemon: as root, chroot isolation, vfs storage
# under .state/container) for tests/ansible/test_container_image.py (make container). No container registry is
# reached from here: the Containerfile's base, Debian 12 slim, is made by debootstrap (variant minbase, what
# debian:bookworm-slim is made of) from Debian's mirror, once, and kept in the storage.
#   image.sh install              buildah and debootstrap, from Debian's packages, when missing
#   image.sh base                 the base image localhost/minbw-debian:bookworm, unless it is there
#   image.sh build CONTEXT TAG    the image, from CONTEXT (a directory with the wheel `make dist` builds)
#   image.sh buildah ARGS...      buildah on that storage
# The build's pip is given this machine's CA bundle (mounted for the RUN steps only, not in the image), for a
# network whose proxy re-signs TLS.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
STATE=${MINBW_CONTAINER_STATE:-$REPO/.state/container}
BASE=localhost/minbw-debian:bookworm
mkdir -p "$STATE"

storage() { buildah --root "$STATE/storage" --runroot "$STATE/run" --storage-driver vfs "$@"; }

case "${1:-}" in
install)
    if command -v buildah >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; then
        exit 0
    fi
    for attempt in 1 2 3 4 5 6; do  # another apt-get may hold the dpkg lock for a while
        if { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q buildah debootstrap; } \
                >"$STATE/install.log" 2>&1; then
            exit 0
        fi
        sleep $((attempt * 10))
    done
    tail -20 "$STATE/install.log" >&2
    echo "apt-get install buildah debootstrap failed" >&2
    exit 1
    ;;
base)
    if storage inspect --type image "$BASE" >/dev/null 2>&1; then
        exit 0
    fi
    rootfs=$(mktemp -d "$STATE/rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$STATE/debootstrap.log" 2>&1 \
        || { tail -20 "$STATE/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
    container=$(storage from scratch)
    cp -a "$rootfs"/. "$(storage mount "$container")"/
    storage umount "$container" >/dev/null
    storage commit --quiet --rm "$container" "$BASE" >/dev/null
    ;;
build)
    context=$2 tag=$3
    printf '[global]\ncert = /run/minbw-host-ca.crt\n' >"$STATE/pip.conf"
    storage bud --isolation chroot --build-arg "BASE=$BASE" \
        --volume /etc/ssl/certs/ca-certificates.crt:/run/minbw-host-ca.crt:ro --volume "$STATE/pip.conf:/etc/pip.conf:ro" \
        -f "$REPO/contrib/container/Containerfile" -t "$tag" "$context"
    ;;
buildah)
    shift
    storage "$@"
    ;;
*)
    echo "usage: $0 install | base | build CONTEXT TAG | buildah ARGS..." >&2
    exit 2
    ;;
esac
