# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r'''
options:
  service_cloud:
    description:
      - The cloud (a C(clouds.yaml) name or a cloud config dict, as O(cloud)) of a service user, Nova's or
        Neutron's, used only to write ports' C(binding:profile). Neutron's policy lets only the service role
        write it (C(update_port:binding:profile) is C(rule:service_api)); admin alone is refused.
      - When left out, the module's own cloud writes it too (enough when that user has the service role).
    type: raw
'''
