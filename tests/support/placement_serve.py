"""``minbw placement serve`` for the tests' session Placement (tests/conftest.py ``PlacementServer``), with one
repeated piece of work of the real openstack-placement done once.

Placement validates every request body and query against its JSON schemas with ``jsonschema.validate``, which
first checks the schema itself against its metaschema (``check_schema``), then the request. Placement's schemas
are constants of its modules, so that first check gives the same answer every time; it was about a fifth of the
server's CPU per request (profile of tests/faults/test_kill.py: 6 of 28 s in the handlers, under cProfile). Here
each schema object is checked once, the first time it is used, and every request is still validated against it
(the same validator, the same error when it does not validate). Nothing else of Placement or minbw is changed.
Measured on 2026-11-28 (2 cores, shared): tests/functional 365 -> 311 CPU s, tests/faults 107 -> 101.

    python -m tests.support.placement_serve placement serve --port PORT --state-dir DIR
"""
from __future__ import annotations

import sys

import jsonschema
from jsonschema import exceptions, validators

_checked: dict[tuple[int, type], object] = {}  # (id, validator class) → the schema itself (held: its id stays its own)


def validate(instance, schema, cls=None, *args, **kwargs):
    """``jsonschema.validate`` (jsonschema 4: validators.validate), the schema's own check done once per schema."""
    if cls is None:
        cls = validators.validator_for(schema)
    if _checked.get((id(schema), cls)) is not schema:
        cls.check_schema(schema)  # raises SchemaError as before: a schema that fails is checked again next time
        _checked[(id(schema), cls)] = schema
    error = exceptions.best_match(cls(schema, *args, **kwargs).iter_errors(instance))
    if error is not None:
        raise error


def main() -> int:
    jsonschema.validate = validate  # placement calls it as jsonschema.validate (placement/util.py, handlers/trait.py)
    from minbw.cli.shell import main as minbw
    return minbw(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
