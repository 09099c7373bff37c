#!/usr/bin/env bash
# Build minbw.openstack from this repository (python/build_collection.py: the collection with its core generated
# from python/minbw into plugins/module_utils/core) and install it, replacing any older copy, into
# DEST/ansible_collections/minbw/openstack, with its dependency openstack.cloud (install_openstack_cloud.sh:
# from PyPI, Galaxy is not reached). DEST defaults to where ansible.cfg's collections_path points
# (.venv/collections). Usage: install_collection.sh [DEST]
#
# Nothing is built when DEST already holds this tree's collection: DEST/.minbw-openstack.fingerprint names the
# files the installed copy was built from, and a build is only made when they changed. Another DEST (a suite's
# private path, sanity's work tree) takes a copy of the default DEST's install when that one is this tree's (what a
# build would install, byte for byte: 0.3 CPU s instead of 2.0), and is built otherwise. The test
# suites call this script at their start, several at once under `make test`: a lock on DEST serializes them, so
# the first one installs and the others find it done (and never replace a copy under a running playbook).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
dest=${1:-$venv/collections}
mkdir -p "$dest"

# What the build takes: the repository less galaxy.yml's build_ignore, and the core it generates the shipped copy
# from (python/minbw) with the script that does it (a superset does no harm: it only makes a change elsewhere
# rebuild). A plugins/module_utils/core in the work tree (a generated copy left there) is never built from.
fingerprint() {
    cd "$repo"
    {
        find . \( -path ./python -o -path ./tests -o -path './.venv*' -o -path ./.state -o -path ./.git \
                  -o -path ./bench -o -path ./.cache -o -path ./.ansible -o -path ./.pytest_cache -o -path ./.hypothesis \
                  -o -path ./notes -o -path ./plugins/module_utils/core -o -name __pycache__ -o -name '*.pyc' \
                  -o -name '*.tar.gz' -o -path ./changelogs/.plugin-cache.yaml \) -prune -o -type f -print0
        find ./python/minbw ./python/build_collection.py -name __pycache__ -prune -o -type f ! -name '*.pyc' -print0
    } | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32
}

exec 9>"$dest/.minbw-install.lock"
flock 9
target=$dest/ansible_collections/minbw/openstack
sum=$(fingerprint)
if [ -f "$target/MANIFEST.json" ] && [ "$(cat "$dest/.minbw-openstack.fingerprint" 2>/dev/null)" = "$sum" ] \
        && [ -f "$dest/ansible_collections/openstack/cloud/MANIFEST.json" ]; then
    echo "minbw.openstack in $dest/ansible_collections/minbw/openstack is this tree's (nothing changed)"
    exit 0
fi

default=$venv/collections
if [ "$(realpath -m "$dest")" != "$(realpath -m "$default")" ] && [ -f "$default/.minbw-openstack.fingerprint" ]; then
    # the default install, read under a shared lock on it (its own install replaces it under the exclusive one)
    exec 8>>"$default/.minbw-install.lock"
    flock -s 8
    if [ -f "$default/ansible_collections/minbw/openstack/MANIFEST.json" ] \
            && [ "$(cat "$default/.minbw-openstack.fingerprint" 2>/dev/null)" = "$sum" ]; then
        bash "$repo/tests/support/ansible/install_openstack_cloud.sh" "$dest" >/dev/null
        mkdir -p "$dest/ansible_collections/minbw"
        staging=$(mktemp -d "$dest/ansible_collections/minbw/.openstack.XXXXXX")
        tar -C "$default/ansible_collections/minbw/openstack" --exclude=__pycache__ -cf - . | tar -C "$staging" -xf -
        rm -rf "$target"
        mv -T "$staging" "$target"
        echo "$sum" >"$dest/.minbw-openstack.fingerprint"
        echo "installed minbw.openstack into $target (a copy of $default's, this tree's)"
        exit 0
    fi
    exec 8>&-
fi

build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
cd "$repo"
# The dependency first: with it in DEST, `ansible-galaxy collection install --offline` resolves it there.
bash "$repo/tests/support/ansible/install_openstack_cloud.sh" "$dest" >/dev/null
"$venv/bin/python" "$repo/python/build_collection.py" --output-path "$build" >/dev/null
ANSIBLE_COLLECTIONS_PATH=$dest "$venv/bin/ansible-galaxy" collection install --force --offline -p "$dest" "$build"/minbw-openstack-*.tar.gz >/dev/null
echo "$sum" >"$dest/.minbw-openstack.fingerprint"
echo "installed minbw.openstack into $dest/ansible_collections/minbw/openstack"
