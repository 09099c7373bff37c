#!/usr/bin/env bash
# ansible-test sanity on a freshly built copy of minbw.openstack, then an ansible-doc render of
# every module and role. Extra arguments go to ansible-test (e.g. --test validate-modules).
# Sanity covers exactly what ships: the built collection (install_collection.sh, through
# python/build_collection.py: galaxy.yml's build_ignore leaves out python/, tests/, tooling and the developers'
# docs, which pytest and ansible-lint check; the core the modules import is generated from python/minbw into
# plugins/module_utils/core, and is checked here as it ships, with no ignore entry of its own).
# The repository's own tests/ would otherwise be sanity-tested as collection content: Python 3.11-only
# pytest code held to the module rules (shebangs, pylint's Ansible plugins, GPL headers).
# The copy lives outside the git work tree: inside it, ansible-test would list only files git tracks.
set -euo pipefail
shopt -s nullglob

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
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

# The committed ignore files (each entry with its reason) go into the copy, which ships no tests/.
# ansible-test fails on an entry that matches nothing, so a stale one cannot linger.
mkdir -p tests/sanity
cp "$repo"/tests/sanity/ignore-*.txt tests/sanity/

"$venv/bin/ansible-test" sanity --python 3.11 --local --color no "$@"

export ANSIBLE_COLLECTIONS_PATH=$work
# One ansible-doc per plugin type, every name in it (one process each: about 0.5 CPU s a start); it fails, naming it,
# when any one's documentation does not load, as one run per name did.
modules=() roles=()
for module in plugins/modules/*.py; do
    name=$(basename "$module" .py)
    [ "$name" = __init__ ] || modules+=("minbw.openstack.$name")
done
for role in roles/*/; do
    roles+=("minbw.openstack.$(basename "$role")")
done
"$venv/bin/ansible-doc" -t module "${modules[@]}" >/dev/null
printf 'ansible-doc: module %s renders\n' "${modules[@]}"
"$venv/bin/ansible-doc" -t role "${roles[@]}" >/dev/null
printf 'ansible-doc: role %s renders\n' "${roles[@]}"
