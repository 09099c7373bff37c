"""The use cases: one entry point per command and module, the only thing the front ends call.

Each entry point takes the :class:`~minbw.usecases.cloud.Cloud` it works on and one request object (a frozen
dataclass of plain values, checked where it is built) and returns one result object with ``to_dict()``. The
``minbw`` / ``openstack bandwidth`` commands turn their options into the request and the result into a table;
the Ansible modules turn their parameters into the request and the result into the module's return values.
Neither assembles a use case from the core's parts itself: that sequence lives here, once.

Files are named after the command's object or the module they serve (``providers`` for ``provider sync|list`` and
the ``bandwidth_providers*`` modules, ``allocation`` for ``allocation create|delete`` and the ``allocation``
module, ...).
"""
