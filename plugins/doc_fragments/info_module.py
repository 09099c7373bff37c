# -*- coding: utf-8 -*-
# Copyright: minbw developers
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations


class ModuleDocFragment:

    # The attributes of a module that only reads (with ansible.builtin.action_common_attributes).
    DOCUMENTATION = r'''
attributes:
  check_mode:
    support: full
    details: The module never changes anything.
  diff_mode:
    support: none
  platform:
    platforms: posix
'''
