#!/usr/bin/env bash
# Put openstack.cloud (minbw.openstack's dependency, galaxy.yml) into DEST/ansible_collections/openstack/cloud,
# without Ansible Galaxy: it comes from PyPI's `ansible` package, which ships the released collection as
# ansible-galaxy installs it (MANIFEST.json, FILES.json). Only that collection is taken out of the wheel (about
# 1 MB of its 51 MB), once per virtualenv, then copied as it is. DEST defaults to where ansible.cfg's
# collections_path points (.venv/collections). Usage: install_openstack_cloud.sh [DEST]
set -euo pipefail

# The newest openstack.cloud on PyPI: ansible 14.5.0 ships openstack.cloud 2.6.0, the first release that imports
# with openstacksdk 4.15 and later (2.5.0, in ansible 12.3.0, reads openstack.version, which those no longer
# import: tests/ansible/test_openstack_cloud_versions.py reproduces it). pip only downloads the wheel (--no-deps;
# --python-version: ansible 14 asks for Python 3.12, and nothing of it is installed or run by this Python).
# MINBW_OPENSTACK_CLOUD_FROM=ansible==12.3.0 takes another release's copy, unchanged.
ANSIBLE_PACKAGE=${MINBW_OPENSTACK_CLOUD_FROM:-ansible==14.5.0}

repo=$(cd "$(dirname "$0")/../../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
dest=${1:-$venv/collections}
# (not the cache of earlier versions of this script, which patched openstack.cloud 2.5.0)
cache=$venv/openstack-cloud/as-released-${ANSIBLE_PACKAGE//[^A-Za-z0-9.]/_}

if [ ! -f "$cache/ansible_collections/openstack/cloud/MANIFEST.json" ]; then
    work=$(mktemp -d "$venv/openstack-cloud.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    "$venv/bin/python" -m pip download -q --no-deps --only-binary :all: --python-version 3.12 -d "$work/wheel" \
        "$ANSIBLE_PACKAGE"
    "$venv/bin/python" - "$work" <<'EOF'
import sys, zipfile
from pathlib import Path
work = Path(sys.argv[1])
(wheel,) = (work / "wheel").glob("ansible-*.whl")
with zipfile.ZipFile(wheel) as z:
    z.extractall(work / "tree", [n for n in z.namelist() if n.startswith("ansible_collections/openstack/cloud/")])
EOF
    mkdir -p "$(dirname "$cache")"
    # several installs may run at once (tests): the first complete extraction wins, atomically
    mv -T "$work/tree" "$cache" 2>/dev/null || true
fi

target=$dest/ansible_collections/openstack/cloud
if ! cmp -s "$cache/ansible_collections/openstack/cloud/MANIFEST.json" "$target/MANIFEST.json"; then
    mkdir -p "$dest/ansible_collections/openstack"
    staging=$(mktemp -d "$dest/ansible_collections/openstack/.cloud.XXXXXX")
    cp -a "$cache/ansible_collections/openstack/cloud/." "$staging/"
    rm -rf "$target"
    mv -T "$staging" "$target"
fi
echo "openstack.cloud $("$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["collection_info"]["version"])' "$target/MANIFEST.json") in $dest"
