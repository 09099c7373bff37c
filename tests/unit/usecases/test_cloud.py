"""The provider cache as one small type (minbw.usecases.cloud.Cache): the sync's file, a file of the user's, or
none; how a config file, a module and the command line say each; and that an option on the command line wins over
the exporter's config file whichever way either says it."""
from __future__ import annotations

import pytest

from minbw.usecases.cloud import DEFAULT_CACHE, NO_CACHE, Cache
from minbw.usecases.exporter import ExporterRequest


@pytest.mark.parametrize("value, expected", [
    (None, NO_CACHE), (False, NO_CACHE), (True, DEFAULT_CACHE), ("", DEFAULT_CACHE),
    ("/var/cache/minbw/p.json", Cache(True, "/var/cache/minbw/p.json")), (NO_CACHE, NO_CACHE)])
def test_a_cache_as_a_config_or_a_module_says_it(value, expected):
    assert Cache.of(value) == expected


def test_the_three_kinds_differ_and_none_opens_nothing():
    assert len({DEFAULT_CACHE, NO_CACHE, Cache.at("/x")}) == 3
    assert Cache.at(None) == Cache.at("") == DEFAULT_CACHE
    assert NO_CACHE.open(api=None) is None  # no cache: nothing read, not even the endpoint


@pytest.mark.parametrize("config, option, expected", [
    ({}, None, DEFAULT_CACHE),                                   # nothing said: the sync's file
    ({"cache": None}, None, NO_CACHE),                           # the config: none
    ({"cache": "/c.json"}, None, Cache.at("/c.json")),           # the config: a file
    ({"cache": "/c.json"}, NO_CACHE, NO_CACHE),                  # --no-cache wins
    ({"cache": None}, Cache.at("/o.json"), Cache.at("/o.json")),  # --cache FILE wins
])
def test_the_command_line_wins_over_the_exporters_config(config, option, expected):
    assert ExporterRequest.from_config(config, cache=option).cache == expected


def test_the_exporters_config_refuses_an_unknown_key_naming_every_known_one():
    from minbw.errors import InvalidInput
    with pytest.raises(InvalidInput) as e:
        ExporterRequest.from_config({"bogus": 1, "listen": "::", "cache": None})
    assert str(e.value) == (
        "the exporter's config: unknown key(s) bogus, listen; known: port_sizes, listen_address, listen_port, "
        "interval, slow_interval, agent_configs, config_dirs, host, neutron, audit, cache, workers, owner_nova, "
        "ovn_chassis, ovn_sb_db, ovs_db, ovn_sbctl, ovs_vsctl, tls_server_config, basic_auth_users, enforcement")
