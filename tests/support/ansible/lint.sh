#!/usr/bin/env bash
# ansible-lint with the production profile over the checkout (modules' examples, roles, playbooks, the
# test playbooks), then antsibull-changelog lint (changelogs/), then ruff over the core (python/: `ruff check` and
# `ruff format --check`), then mypy over it (strict on model/, plan/, neutron/), both configured in
# python/pyproject.toml. Any finding fails the script.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
cd "$repo"
# The roles and playbooks use openstack.cloud's modules: ansible-lint resolves them where ansible.cfg's
# collections_path points (.venv/collections).
bash "$repo/tests/support/ansible/install_openstack_cloud.sh" >/dev/null
# ansible-lint runs ansible-playbook --syntax-check and ansible-galaxy: the venv's, found on PATH.
# --offline: no requirements.yml or galaxy.yml dependency installs (openstack.cloud is there already) and no
# schema downloads.
# Its syntax checks (one ansible-playbook per playbook and role, about 0.45 of their 0.7 CPU s each importing
# ansible-core) are forked from a warm process (tests/support/playbook_forks.py, which ends when $forks goes);
# MINBW_PLAYBOOK_FORKS=0 spawns each.
forks=$(mktemp -d "${TMPDIR:-/tmp}/minbw-playbook-forks.XXXXXX")
trap 'rm -rf "$forks"' EXIT
lint_path=$venv/bin:$PATH
if [ "${MINBW_PLAYBOOK_FORKS:-1}" != 0 ]; then
    printf '#!/bin/sh\nexec %q -I -S %q --client %q "$@"\n' "$venv/bin/python" "$repo/tests/support/playbook_forks.py" \
        "$forks" >"$forks/ansible-playbook"
    chmod +x "$forks/ansible-playbook"
    lint_path=$forks:$lint_path
fi
PATH=$lint_path "$venv/bin/ansible-lint" --offline --profile production --nocolor
"$venv/bin/antsibull-changelog" lint
# --no-cache: nothing written into the checkout
(cd python && "$venv/bin/ruff" check --no-cache . && "$venv/bin/ruff" format --no-cache --check .)
# its cache outside the checkout, which stays clean
(cd python && "$venv/bin/mypy" --cache-dir "${TMPDIR:-/tmp}/minbw-mypy-cache")
echo "ansible-lint (production), antsibull-changelog lint, ruff check, ruff format --check and mypy: no findings"
