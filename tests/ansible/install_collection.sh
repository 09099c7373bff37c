#!/usr/bin/env bash
# Build minbw.openstack from this repository and install it, replacing any older copy, into
# DEST/ansible_collections/minbw/openstack, with its dependency openstack.cloud (install_openstack_cloud.sh:
# from PyPI, Galaxy is not reached). DEST defaults to where ansible.cfg's collections_path points
# (.venv/collections). Usage: install_collection.sh [DEST]
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
dest=${1:-$venv/collections}
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

cd "$repo"
# The dependency first: with it in DEST, `ansible-galaxy collection install --offline` resolves it there.
bash "$repo/tests/ansible/install_openstack_cloud.sh" "$dest" >/dev/null
"$venv/bin/ansible-galaxy" collection build --force --output-path "$build" . >/dev/null
ANSIBLE_COLLECTIONS_PATH=$dest "$venv/bin/ansible-galaxy" collection install --force --offline -p "$dest" "$build"/minbw-openstack-*.tar.gz >/dev/null
echo "installed minbw.openstack into $dest/ansible_collections/minbw/openstack"
