#!/usr/bin/env bash
# The collection's documentation site (`make docs`), from the collection as it ships: built and installed into a
# scratch collections path (outside the git work tree, where antsibull-docs would see only files git tracks),
# linted (antsibull-docs lint-collection-docs --plugin-docs: the modules', roles' and filters' docs and their
# references), then rendered: antsibull-docs writes the pages of the modules, roles and filters, the shipped
# guides (docs/*.md) and README.collection.md join them, and Sphinx builds HTML with warnings as errors.
# Usage: docs/site/build.sh [OUT]   (OUT defaults to build/docs; the site is OUT/html/index.html)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${MINBW_VENV:-$repo/.venv}
out=${1:-$repo/build/docs}
work=$(mktemp -d "${TMPDIR:-/tmp}/minbw-docs.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PATH=$venv/bin:$PATH ANSIBLE_COLLECTIONS_PATH=$work ANSIBLE_CONFIG=$work/ansible.cfg
printf '[defaults]\n' > "$work/ansible.cfg"

bash "$repo/tests/support/ansible/install_collection.sh" "$work" >/dev/null
collection=$work/ansible_collections/minbw/openstack
(cd "$collection" && antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs all \
    --disallow-unknown-collection-refs .)
echo "antsibull-docs lint-collection-docs: no findings"

rm -rf "$out"
mkdir -p "$out/rst"
chmod 700 "$out/rst"  # antsibull-docs wants its output directory writable by its owner only
antsibull-docs --config-file "$here/antsibull-docs.cfg" collection --use-current --cleanup everything \
    --dest-dir "$out/rst" minbw.openstack >/dev/null
cp "$here/index.rst" "$here/cli.rst" "$collection/README.collection.md" "$collection/CHANGELOG.rst" "$collection/LICENSE" "$out/rst/"
# the guides where the tarball has them, so that their links to each other and to the README hold in the site
cp -r "$collection/docs" "$out/rst/docs"
sphinx-build -q -W --keep-going -b html -c "$here" "$out/rst" "$out/html"
echo "documentation site: $out/html/index.html"
