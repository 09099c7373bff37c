# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:

    # Connection options, named as openstack.cloud's "openstack" fragment names them,
    # so the same module_defaults and clouds.yaml entries work for both collections.
    DOCUMENTATION = r'''
options:
  cloud:
    description:
      - Named cloud or cloud config to operate against.
      - If O(cloud) is a string, it references a named cloud config as defined in an
        OpenStack C(clouds.yaml) file. Provides default values for O(auth) and O(auth_type).
        This parameter is not needed if O(auth) is provided or if OpenStack C(OS_*)
        environment variables are present.
      - If O(cloud) is a dict, it contains a complete cloud configuration like would be
        in a section of C(clouds.yaml).
    type: raw
  auth:
    description:
      - Dictionary containing auth information as needed by the cloud's auth plugin strategy.
        For the default C(password) plugin, this would contain C(auth_url), C(username),
        C(password), C(project_name) and any information about domains (for example,
        C(user_domain_name) or C(project_domain_name)) if the cloud supports them.
      - For the embedded Placement (role P(minbw.openstack.placement_local#role)) use
        O(auth_type=admin_token) with C(endpoint) and C(token).
      - This parameter is not needed if a named cloud is provided or OpenStack C(OS_*)
        environment variables are present.
    type: dict
  auth_type:
    description:
      - Name of the auth plugin to use. If the cloud uses something other than password
        authentication, the name of the plugin should be indicated here and the contents
        of the O(auth) parameter should be updated accordingly.
    type: str
  region_name:
    description:
      - Name of the region.
    type: str
  interface:
    description:
      - Endpoint URL type to fetch from the service catalog.
    type: str
    choices: [admin, internal, public]
    default: public
    aliases: [endpoint_type]
  validate_certs:
    description:
      - Whether or not SSL API requests should be verified.
      - When not set, the value of the cloud configuration (or openstacksdk's default) is used.
    type: bool
    aliases: [verify]
  ca_cert:
    description:
      - A path to a CA Cert bundle that can be used as part of verifying SSL API requests.
    type: str
    aliases: [cacert]
  client_cert:
    description:
      - A path to a client certificate to use as part of the SSL transaction.
    type: str
    aliases: [cert]
  client_key:
    description:
      - A path to a client key to use as part of the SSL transaction.
    type: str
    aliases: [key]
  api_timeout:
    description:
      - How long should the socket layer wait before timing out for API calls.
        If this is omitted, nothing will be passed to the requests library.
    type: int
  wait:
    description:
      - Whether to wait until the requested change is complete, as in openstack.cloud.
      - Modules that wait describe what they wait for; the others make no request that needs waiting
        and accept O(wait) and O(timeout) so that one C(module_defaults) serves both collections.
    type: bool
    default: true
  timeout:
    description:
      - How long, in seconds, to wait when O(wait=true).
    type: int
    default: 180
  sdk_log_path:
    description:
      - Path of a file openstacksdk writes its log to (appending); no log file when left out.
    type: str
  sdk_log_level:
    description:
      - Level of openstacksdk's log in O(sdk_log_path); C(DEBUG) adds every HTTP request and response.
    type: str
    default: INFO
    choices: [INFO, DEBUG]
requirements:
  - python >= 3.11
  - openstacksdk >= 4.0
  - keystoneauth1 >= 5.0
  - os-resource-classes >= 1.1
  - requests >= 2.25
  - PyYAML >= 5.4
  - highspy >= 1.7
notes:
  - The standard OpenStack environment variables, such as E(OS_CLOUD) or E(OS_CLIENT_CONFIG_FILE),
    may be used instead of providing explicit values.
  - Auth information is driven by openstacksdk, which means that values can come from a
    C(clouds.yaml) file in the current directory, C(~/.config/openstack/) or C(/etc/openstack/),
    then from standard environment variables, then finally by explicit parameters in plays.
  - Set these options once for every module of the collection with
    C(module_defaults) and the action group C(group/minbw.openstack.minbw).
'''
