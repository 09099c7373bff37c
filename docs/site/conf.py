# Sphinx configuration of the collection's documentation site (docs/site/build.sh, `make docs`): the pages
# antsibull-docs writes for the modules, roles and filters, and the guides of docs/ (Markdown, read by MyST).
project = 'minbw.openstack'
copyright = 'minbw developers'
author = 'minbw developers'
title = 'minbw.openstack: guaranteed minimum bandwidth for OpenStack'
html_title = title
html_short_title = 'minbw.openstack'

# cliff.sphinxext: the command line reference (cli.rst) generated from the commands, as osc-placement's
extensions = ['myst_parser', 'sphinx_antsibull_ext', 'cliff.sphinxext']
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
# "## Install" in a guide is a link target (#install) on GitHub; the same anchors in the site
myst_heading_anchors = 3
myst_enable_extensions = ['colon_fence']

pygments_style = 'ansible'
# the module pages name their languages; a guide's code block without one is shown as it is
highlight_language = 'none'
html_theme = 'sphinx_ansible_theme'
# no top bar links, and the logo links to the site's root: the project has no public home to link to
html_theme_options = {
    'topbar_links': {},
    # the sidebar lists the pages of the toctrees shown, not the hidden ones (antsibull-docs' breadcrumbs)
    'includehidden': False,
}
html_show_sphinx = False
html_use_smartypants = True
html_use_modindex = False
html_use_index = False
html_copy_source = False
display_version = False
# no intersphinx: the site builds offline, and a reference it cannot resolve is a warning, hence an error
default_role = 'any'
nitpicky = True


# References the module and role pages make into the Ansible documentation (its docsite's labels, and other
# collections' plugins) link there, as intersphinx would with its inventory, which an offline build does not
# have. Any other reference that does not resolve stays a warning.
ANSIBLE_DOCS = 'https://docs.ansible.com/ansible/latest/'
ANSIBLE_LABELS = {
    'common_return_values': 'reference_appendices/common_return_values.html',
    'ansible_configuration_settings': 'reference_appendices/config.html',
}


def _ansible_docs_url(target):
    if target in ANSIBLE_LABELS:
        return ANSIBLE_DOCS + ANSIBLE_LABELS[target]
    parts = target.split('.')
    # ansible_collections.NAMESPACE.NAME.PLUGIN_TYPE, e.g. ansible_collections.ansible.builtin.service_module
    if len(parts) == 4 and parts[0] == 'ansible_collections' and parts[1:3] != ['minbw', 'openstack'] and \
            parts[3].endswith(('_module', '_filter', '_lookup')):
        return f'{ANSIBLE_DOCS}collections/{parts[1]}/{parts[2]}/{parts[3]}.html'
    return None


def _resolve_in_ansible_docs(app, env, node, contnode):
    from docutils import nodes
    url = _ansible_docs_url(node.get('reftarget', ''))
    if url is None:
        return None
    link = nodes.reference('', '', internal=False, refuri=url)
    link.append(contnode)
    return link


def setup(app):
    app.connect('missing-reference', _resolve_in_ansible_docs)
