#!/usr/bin/env bash
# ansible-lint with the production profile over the checkout (modules' examples, roles, playbooks, the
# test playbooks), then antsibull-changelog lint (changelogs/). Any finding fails the script.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
cd "$repo"
# ansible-lint runs ansible-playbook --syntax-check and ansible-galaxy: the venv's, found on PATH.
# --offline: no requirements.yml installs or schema downloads (the collection has no dependencies).
PATH="$venv/bin:$PATH" "$venv/bin/ansible-lint" --offline --profile production --nocolor
"$venv/bin/antsibull-changelog" lint
echo "ansible-lint (production) and antsibull-changelog lint: no findings"
