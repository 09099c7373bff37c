# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Filter: the fleet's bandwidth_enforcement_info results compared in one place (the role bandwidth_enforcement)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
# The core's own code, shipped with the collection (pure, standard library only).
from ansible_collections.minbw.openstack.plugins.module_utils.core.reports.enforcement_fleet import fleet


def enforcement_fleet(results):
    """{inventory host: its registered bandwidth_enforcement_info result, or None} -> the fleet's outcome."""
    if not isinstance(results, Mapping):
        raise AnsibleFilterError('enforcement_fleet: expected a dict of inventory host -> its registered '
                                 'bandwidth_enforcement_info result (or null), got %s' % type(results).__name__)
    wrong = sorted(str(h) for h, r in results.items() if r is not None and not isinstance(r, Mapping))
    if wrong:
        raise AnsibleFilterError('enforcement_fleet: %s: expected a registered task result (a dict) or null'
                                 % ', '.join(wrong))
    return fleet({str(h): (None if r is None else dict(r)) for h, r in results.items()})


class FilterModule:
    def filters(self):
        return {'enforcement_fleet': enforcement_fleet}
