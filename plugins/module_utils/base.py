# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Shared plumbing of the minbw.openstack modules: auth options, a lazy connection,
one place that turns errors into a failed task, and the result shape (changed, diff)."""

from __future__ import annotations

import os
import sys
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
# The core, shipped with the collection (module_utils/core, python/ship_core.py): its errors are what every
# module raises and reports.
from ansible_collections.minbw.openstack.plugins.module_utils.core import errors as core_errors

# The libraries the shipped core imports (requirements.txt), checked before a module that talks to a cloud uses it.
try:
    import openstack
    from openstack import exceptions as sdk_exceptions
    from keystoneauth1 import exceptions as ksa_exceptions
except ImportError:
    HAS_OPENSTACKSDK = False
    OPENSTACKSDK_IMPORT_ERROR = traceback.format_exc()
    sdk_exceptions = ksa_exceptions = None
else:
    HAS_OPENSTACKSDK = True
    OPENSTACKSDK_IMPORT_ERROR = None

try:
    import os_resource_classes  # noqa: F401 pylint: disable=unused-import
except ImportError:
    HAS_OS_RESOURCE_CLASSES = False
    OS_RESOURCE_CLASSES_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_OS_RESOURCE_CLASSES = True
    OS_RESOURCE_CLASSES_IMPORT_ERROR = None

# Named as openstack.cloud's OpenStackModule names them, with its defaults (doc fragment
# minbw.openstack.auth), so one module_defaults serves both collections.
AUTH_ARGUMENT_SPEC = dict(
    cloud=dict(type='raw'),
    auth=dict(type='dict', no_log=True),
    auth_type=dict(type='str'),
    region_name=dict(type='str'),
    interface=dict(type='str', default='public', choices=['admin', 'internal', 'public'],
                   aliases=['endpoint_type']),
    validate_certs=dict(type='bool', aliases=['verify']),
    ca_cert=dict(type='str', aliases=['cacert']),
    client_cert=dict(type='str', aliases=['cert']),
    client_key=dict(type='str', no_log=True, aliases=['key']),
    api_timeout=dict(type='int'),
    # server and server_move wait and document their own use; the others accept them so that
    # openstack.cloud's module_defaults apply unchanged.
    wait=dict(type='bool', default=True),
    timeout=dict(type='int', default=180),
    sdk_log_path=dict(type='str'),
    sdk_log_level=dict(type='str', default='INFO', choices=['INFO', 'DEBUG']),
)

# Modules that write ports' binding:profile (doc fragment minbw.openstack.service_cloud).
SERVICE_CLOUD_SPEC = dict(service_cloud=dict(type='raw'))

# Module option -> openstack.connect() keyword.
_CONNECT_KWARGS = dict(auth='auth', auth_type='auth_type', region_name='region_name',
                       interface='interface', validate_certs='verify', ca_cert='cacert',
                       client_cert='cert', client_key='key', api_timeout='api_timeout')


def sdk_logging_kwargs(params):
    """openstack.enable_logging()'s keywords for O(sdk_log_path) and O(sdk_log_level), as openstack.cloud
    sets them (DEBUG logs every HTTP request too); None when no log file is asked for."""
    if params.get('sdk_log_path') is None:
        return None
    debug = params.get('sdk_log_level') == 'DEBUG'
    return dict(debug=debug, http_debug=debug, path=params['sdk_log_path'])


_SECRET_KEYS = ('password', 'token', 'secret', 'key', 'passcode', 'totp')


def secret_values(value, secret=False):
    """The leaf values of a cloud config (clouds.yaml's shape) under a secret-looking key (password,
    token, application_credential_secret, key, ...); auth_url and user names stay readable."""
    if isinstance(value, dict):
        found = set()
        for key, item in value.items():
            found |= secret_values(item, secret or any(s in str(key).lower() for s in _SECRET_KEYS))
        return found
    if isinstance(value, (list, tuple)):
        return set().union(*(secret_values(v, secret) for v in value)) if value else set()
    return {str(value)} if secret and value not in (None, '') and not isinstance(value, bool) else set()


def _suboption_options(spec):
    """The options that take suboptions: given something that is not a dict (``separation: true``), ansible-core's
    own validation crashes on them (TypeError, a traceback) instead of failing the task."""
    return [name for name, opt in spec.items() if opt.get('options')]


def connect(**kwargs):
    """``openstack.connect(**kwargs)`` without this run's payload on ``sys.path``.

    keystoneauth1 finds the auth plugin through stevedore, whose entry-point cache (~/.cache/python-entrypoints)
    is keyed on ``sys.path``. Ansible puts the module's payload (a zip under a new temporary directory each run)
    first on ``sys.path``, so every module run missed that cache: it read the entry points of every installed
    distribution (0.3 s of CPU in a venv of 300) and wrote one more cache file of them. The payload holds no
    distribution, so the entry points found without it are the same, and the cache written by the first run
    serves every later one.
    """
    saved = sys.path[:]
    sys.path[:] = [entry for entry in saved if not _holds_this_file(entry)]
    try:
        return openstack.connect(**kwargs)
    finally:
        sys.path[:] = saved


def _holds_this_file(entry):
    """Whether the ``sys.path`` entry is where this module was imported from (Ansible's payload)."""
    return bool(entry) and __file__.startswith(os.path.join(entry, ''))


class MinbwModule:
    """An AnsibleModule with the auth options, that connects on first use of ``conn``.

    ``run(func)`` calls ``func(module)``, exits with the dict it returns (build it with
    ``result()``) and reports every minbw, Placement and SDK error once, as a failed task.
    """

    def __init__(self, argument_spec, supports_check_mode=True, cloud=True, **module_kwargs):
        """``cloud=False``: a module that talks to no cloud (no auth options and no openstacksdk: it uses only
        the core's pure, standard-library part, which runs on Python 3.9)."""
        spec = dict(AUTH_ARGUMENT_SPEC, **argument_spec) if cloud else argument_spec
        try:
            self.ansible = AnsibleModule(argument_spec=spec, supports_check_mode=supports_check_mode,
                                         **module_kwargs)
        except TypeError:
            # only to fail the task naming them: the same module with those options unchecked (public API)
            lenient = dict(spec, **{name: dict(type='raw', no_log=spec[name].get('no_log', False))
                                    for name in _suboption_options(spec)})
            self.ansible = AnsibleModule(argument_spec=lenient, supports_check_mode=supports_check_mode,
                                         **module_kwargs)
            wrong = sorted(name for name in _suboption_options(spec) if self.ansible.params.get(name) is not None
                           and not isinstance(self.ansible.params[name],
                                              (dict, list) if spec[name].get('type') == 'list' else dict))
            if not wrong:
                raise
            self.ansible.fail_json(msg='%s: expected a dict of its suboptions (see the module documentation). '
                                       'Fix: give it as a dict, or leave it out' % ', '.join(wrong))
        self.params = self.ansible.params
        # a cloud config dict (O(cloud), O(service_cloud)) is raw, not no_log as a whole (a cloud's name
        # is no secret): its secrets are masked wherever they would show (results, invocation, messages)
        for option in ('cloud', 'service_cloud'):
            self.ansible.no_log_values.update(secret_values(self.params.get(option)))
        self.check_mode = self.ansible.check_mode
        self._conn = None
        needed = [(HAS_OPENSTACKSDK, 'openstacksdk', OPENSTACKSDK_IMPORT_ERROR),
                  (HAS_OS_RESOURCE_CLASSES, 'os-resource-classes', OS_RESOURCE_CLASSES_IMPORT_ERROR)] if cloud else []
        for found, lib, error in needed:
            if not found:
                self.ansible.fail_json(msg=missing_required_lib(lib), exception=error)
        logging_kwargs = sdk_logging_kwargs(self.params) if cloud else None
        if logging_kwargs:
            openstack.enable_logging(**logging_kwargs)

    @property
    def conn(self):
        """The openstacksdk Connection, made on first use (inside ``run``, so errors are reported)."""
        if self._conn is None:
            self._conn = connect(**self.connect_kwargs())
        return self._conn

    def cloud(self):
        """The use cases' Cloud: this module's connection (made on first use) and its O(service_cloud) user."""
        from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.cloud import Cloud
        return Cloud(lambda: self.conn, service_connect=self.service_conn)

    def service_conn(self):
        """The connection for writes Neutron allows to the service role only (``binding:profile``): the
        module's O(service_cloud) (a clouds.yaml name or a cloud config dict) when given, else ``conn``."""
        service = self._cloud_option('service_cloud')
        if not service:
            return self.conn
        return connect(**(dict(service) if isinstance(service, dict) else dict(cloud=service)))

    def _cloud_option(self, option):
        value = self.params.get(option)
        if value is not None and not isinstance(value, (str, dict)):
            self.ansible.fail_json(msg='%s: expected the name of a clouds.yaml entry or a cloud config dict, got %s. '
                                       'Fix: give a cloud name (a string) or a dict as in clouds.yaml'
                                       % (option, type(value).__name__))
        return value

    def connect_kwargs(self):
        cloud = self._cloud_option('cloud')
        given = {opt: self.params[opt] for opt in _CONNECT_KWARGS if self.params[opt] is not None}
        if isinstance(cloud, dict):
            # A whole cloud config: mixing it with single options is ambiguous (as in openstack.cloud).
            clash = sorted(opt for opt in given if not (opt == 'interface' and given[opt] == 'public'))
            if clash:
                self.ansible.fail_json(msg='cloud is a cloud config dict; leave out: %s' % ', '.join(clash))
            return dict(cloud)
        return dict({_CONNECT_KWARGS[opt]: value for opt, value in given.items()}, cloud=cloud)

    def result(self, changed, diff=None, **values):
        """The module result; ``diff`` ({'before', 'after'} or a list of them) only in diff mode."""
        values['changed'] = bool(changed)
        if diff is not None and self.ansible._diff:
            values['diff'] = diff
        return values

    def plan_result(self, plan, **values):
        """The result of a core plan: changed from its ops, the diff from its before/after."""
        return self.result(plan.changed, diff=plan.diff(), **values)

    def run(self, func):
        try:
            result = func(self)
        except core_errors.MinbwError as e:
            # what the error carries (Placement's code, the option, NoValidHost's diagnosis) comes along
            details = e.to_dict()
            details['msg'] = str(e)
            self.ansible.fail_json(**details)
        except Exception as e:  # pylint: disable=broad-except
            if not HAS_OPENSTACKSDK:
                raise
            from ansible_collections.minbw.openstack.plugins.module_utils.core.usecases.connection import (
                OptionNames, explain)
            names = OptionNames(cacert='ca_cert (cacert: in clouds.yaml)',
                                insecure='validate_certs: false (verify: false in clouds.yaml)',
                                cloud='cloud', auth="the module's cloud / auth options or clouds.yaml")
            region = self._conn.config if self._conn is not None else None
            failed = explain(e, region, names)
            if failed is not None:
                self.ansible.fail_json(msg=str(failed))
            if isinstance(e, sdk_exceptions.HttpException):
                self.ansible.fail_json(msg=str(e), status=e.status_code, request_id=e.request_id,
                                       method=e.method, url=e.url, details=e.details)
            if isinstance(e, (sdk_exceptions.SDKException, ksa_exceptions.ClientException)):
                self.ansible.fail_json(msg='%s: %s' % (type(e).__name__, e))
            raise
        self.ansible.exit_json(**result)
