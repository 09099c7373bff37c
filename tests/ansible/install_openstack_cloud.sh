#!/usr/bin/env bash
# Put openstack.cloud (minbw.openstack's dependency, galaxy.yml) into DEST/ansible_collections/openstack/cloud,
# without Ansible Galaxy: it comes from PyPI's `ansible` package, which ships the released collection as
# ansible-galaxy installs it (MANIFEST.json, FILES.json). Only that collection is taken out of the wheel (about
# 1 MB of its 54 MB), once per virtualenv, then copied (with the compatibility fix below). DEST defaults to where ansible.cfg's collections_path
# points (.venv/collections). Usage: install_openstack_cloud.sh [DEST]
set -euo pipefail

# ansible 12.3.0 ships openstack.cloud 2.5.0 and pins ansible-core ~=2.19 (requirements-test.txt installs 2.19);
# pip only downloads it (--no-deps), nothing of it is installed into the virtualenv.
ANSIBLE_PACKAGE=${MINBW_OPENSTACK_CLOUD_FROM:-ansible==12.3.0}

repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
dest=${1:-$venv/collections}
cache=$venv/openstack-cloud/${ANSIBLE_PACKAGE//[^A-Za-z0-9.]/_}

if [ ! -f "$cache/ansible_collections/openstack/cloud/MANIFEST.json" ]; then
    work=$(mktemp -d "$venv/openstack-cloud.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    "$venv/bin/python" -m pip download -q --no-deps --only-binary :all: -d "$work/wheel" "$ANSIBLE_PACKAGE"
    "$venv/bin/python" - "$work" <<'EOF'
import re, sys, zipfile
from pathlib import Path
work = Path(sys.argv[1])
(wheel,) = (work / "wheel").glob("ansible-*.whl")
with zipfile.ZipFile(wheel) as z:
    z.extractall(work / "tree", [n for n in z.namelist() if n.startswith("ansible_collections/openstack/cloud/")])
# openstack.cloud before 2.6.0 reads openstack.version.__version__ after `import openstack`; openstacksdk 4.15
# and later no longer import that submodule there (AttributeError: module 'openstack' has no attribute
# 'version'). Newer openstack.cloud is not on PyPI: import the submodule where the collection imports openstack.
utils = work / "tree/ansible_collections/openstack/cloud/plugins/module_utils/openstack.py"
text = utils.read_text()
old = "sdk = importlib.import_module('openstack')"
if "sdk.version.__version__" in text:
    assert text.count(old) == 2, "openstack.cloud changed: check install_openstack_cloud.sh's compatibility fix"
    utils.write_text(re.sub(r"( *)" + re.escape(old), r"\g<0>\n\1importlib.import_module('openstack.version')", text))
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
