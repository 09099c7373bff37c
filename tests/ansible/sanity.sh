#!/usr/bin/env bash
# ansible-test sanity on a freshly built copy of minbw.openstack, then an ansible-doc render of
# every module and role. Extra arguments go to ansible-test (e.g. --test validate-modules).
# The copy lives outside the git work tree: inside it, ansible-test would list only files git tracks.
set -euo pipefail
shopt -s nullglob

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
work=$(mktemp -d "${TMPDIR:-/tmp}/minbw-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ansible-test bootstraps pip into its sanity venvs with get-pip.py from a host this machine
# cannot reach; it uses a cached copy when there is one, so give it ours (pip from PyPI).
ansible_test=$("$venv/bin/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',$/\1/p" "$ansible_test/_internal/python_requirements.py")
get_pip=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
mkdir -p "$(dirname "$get_pip")"
cmp -s "$here/get_pip.py" "$get_pip" || cp "$here/get_pip.py" "$get_pip"

"$here/install_collection.sh" "$work"
cd "$work/ansible_collections/minbw/openstack"

# validate-modules wants a GPLv3 header in every module; this collection is Apache-2.0.
# That one check, and only it, is ignored for each module (the copy has no tests/ of its own).
core=$("$venv/bin/python" -c 'from ansible.release import __version__ as v; print(".".join(v.split(".")[:2]))')
mkdir -p tests/sanity
for module in plugins/modules/*.py; do
    echo "$module validate-modules:missing-gplv3-license # Apache-2.0, see galaxy.yml"
done > "tests/sanity/ignore-$core.txt"

"$venv/bin/ansible-test" sanity --python 3.11 --local --color no "$@"

export ANSIBLE_COLLECTIONS_PATH=$work
for module in plugins/modules/*.py; do
    name=$(basename "$module" .py)
    [ "$name" = __init__ ] && continue
    "$venv/bin/ansible-doc" -t module "minbw.openstack.$name" >/dev/null
    echo "ansible-doc: module minbw.openstack.$name renders"
done
for role in roles/*/; do
    name=$(basename "$role")
    "$venv/bin/ansible-doc" -t role "minbw.openstack.$name" >/dev/null
    echo "ansible-doc: role minbw.openstack.$name renders"
done
