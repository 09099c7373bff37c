"""heal over every server: a server Nova deletes between its listing and its read is gone (nothing to heal), not
an error that stops the run for the others (a race a real Nova cannot be made to lose on demand: a stand-in)."""
from __future__ import annotations

import types

import pytest
from openstack import exceptions as sdk_exceptions

from minbw.ops import heal


class Compute:
    def __init__(self, ids, gone):
        self.ids, self.gone = ids, gone

    def servers(self, all_projects=False):
        assert all_projects
        return [types.SimpleNamespace(id=i) for i in self.ids]

    def get_server(self, server_id):
        if server_id in self.gone:
            raise sdk_exceptions.NotFoundException(f"No Server found for {server_id}")
        if server_id == "broken":
            raise sdk_exceptions.HttpException("Nova answered 500")
        return types.SimpleNamespace(id=server_id)


def test_a_server_deleted_after_the_listing_is_left_out_and_the_others_are_read():
    conn = types.SimpleNamespace(compute=Compute(["a", "b", "c"], gone={"b"}))
    assert [s.id for s in heal.servers_to_heal(conn)] == ["a", "c"]


def test_any_other_failure_still_stops_the_listing():
    conn = types.SimpleNamespace(compute=Compute(["a", "broken"], gone=set()))
    with pytest.raises(sdk_exceptions.HttpException):
        heal.servers_to_heal(conn)
