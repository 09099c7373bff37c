"""Nova refusing a call (a 4xx/5xx answer) becomes NovaMoveFailed with the text users see, from the one helper
:func:`minbw.ops.server_move.nova_refusal` that the moves, the forced-down switch and the drain's calls share.
Nova's refusals are stood in for: a real Nova refuses these only in states a unit test cannot set up."""
from __future__ import annotations

import types

import pytest
from openstack import exceptions as sdk_exceptions

from minbw.errors import NovaMoveFailed
from minbw.ops import drain, server_move

SERVER = types.SimpleNamespace(id="s-1", name="vm", status="ACTIVE", task_state=None, flavor={}, fault=None)
CONFLICT = sdk_exceptions.HttpException("Conflict", http_status=409, details="Cannot 'migrate' instance s-1")


class Compute:
    """Nova's compute API as openstacksdk shows it: one server, one nova-compute on h1; every call refused."""

    def __init__(self, refusal=CONFLICT):
        self.refusal = refusal

    def find_server(self, name_or_id, ignore_missing=True, **_):
        return SERVER if name_or_id in (SERVER.id, SERVER.name) else None

    def get_server(self, server_id):
        return SERVER

    def migrations(self, **_):
        return []

    def services(self, binary, host):
        return [types.SimpleNamespace(id="svc-1", host=host, status="enabled", disabled_reason=None)]

    def _refuse(self, *args, **kwargs):
        raise self.refusal

    start_server = migrate_server = live_migrate_server = _refuse
    update_service_forced_down = disable_service = enable_service = _refuse


def conn(refusal=CONFLICT):
    return types.SimpleNamespace(compute=Compute(refusal))


def refused(call) -> NovaMoveFailed:
    with pytest.raises(NovaMoveFailed) as got:
        call()
    return got.value


def test_a_move_refused_names_the_server_and_nova_s_message():
    e = refused(lambda: server_move.migrate(conn(), "vm", timeout=1))
    assert str(e) == "migrate: Nova refused it for server vm (s-1): Cannot 'migrate' instance s-1"
    assert (e.action, e.server, e.status, e.task_state, e.migration, e.timed_out) == (
        "migrate", "s-1", "ACTIVE", None, None, False)


def test_without_details_the_refusal_shows_the_exception_itself():
    e = refused(lambda: server_move.migrate(conn(sdk_exceptions.HttpException("boom", http_status=500)), "vm"))
    assert str(e) == "migrate: Nova refused it for server vm (s-1): boom"


def test_the_forced_down_switch_refused_names_the_host_and_the_switch():
    e = refused(lambda: server_move.force_down(conn(), "h1", False))
    assert str(e) == "force_down=False: Nova refused it for nova-compute on h1: Cannot 'migrate' instance s-1"
    assert (e.action, e.server, e.status, e.task_state) == ("force_down", None, None, None)


@pytest.mark.parametrize("what, call", [
    ("disable", lambda c: drain.disable_compute(c, "h1", "maintenance")),
    ("enable", lambda c: drain.enable_compute(c, "h1")),
])
def test_a_service_switch_of_the_drain_refused_names_the_host(what, call):
    e = refused(lambda: call(conn()))
    assert str(e) == f"{what}: Nova refused it for nova-compute on h1: Cannot 'migrate' instance s-1"
    assert (e.action, e.server) == (what, None)


@pytest.mark.parametrize("kind, action", [(drain.LIVE, "live_migrate"), ("cold", "migrate")])
def test_a_drain_move_refused_names_the_server_and_its_target(kind, action):
    e = refused(lambda: drain.start_move(conn(), "s-1", kind, "h2"))
    assert str(e) == f"{action}: Nova refused it for server vm (s-1) to h2: Cannot 'migrate' instance s-1"
    assert (e.action, e.server, e.status, e.task_state) == (action, "s-1", "ACTIVE", None)


def test_anything_but_a_refusal_passes_through():
    with pytest.raises(KeyError), server_move.nova_refusal("migrate", "server vm (s-1)", server=SERVER):
        raise KeyError("not Nova's answer")
