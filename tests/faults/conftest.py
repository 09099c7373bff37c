"""The real embedded Placement behind the fault-injecting proxy (tests/support/faults/proxy.py)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.faults.proxy import FaultProxy

# The client's timeout here, and how late a "slow_after" answer comes (later: the client gives up first).
# The embedded Placement answers one request at a time. With a timeout of 1 s, a loaded machine (make test's
# lanes beside two mini-clouds) once took longer than that for an ordinary GET /allocation_candidates; each
# retry queued behind the request the client had abandoned, and all four tries timed out (CI, stop 25:
# test_claim_and_free_under_faults[slow_after]). 3 s leaves a loaded machine room; only the injected slow
# answers wait for it.
TIMEOUT = 3.0
SLOW = TIMEOUT + 1.0
# For a test whose faults are not timeouts and which counts retries exactly: on a loaded machine an ordinary call
# to the one-request-at-a-time embedded Placement (queued behind the sync's parallel reads) once took more than
# TIMEOUT, and each such timeout was one more retry (CI, stop 50: test_503_then_answer_is_retried counted 11, not 3).
UNHURRIED = 30.0
# fast but real back-off for tests (the defaults are in minbw.placement.client.RetryPolicy)
TEST_POLICY = {"attempts": 4, "backoff": 0.02, "max_backoff": 0.1, "timeout": TIMEOUT}
TEST_ENV = {"MINBW_PLACEMENT_ATTEMPTS": "4", "MINBW_PLACEMENT_BACKOFF": "0.02",
            "MINBW_PLACEMENT_MAX_BACKOFF": "0.1", "MINBW_PLACEMENT_TIMEOUT": str(TIMEOUT)}


class Proxied:
    """A clouds.yaml whose Placement is the proxy, and clients through it."""

    def __init__(self, server, proxy: FaultProxy, directory: Path):
        self.server = server
        self.proxy = proxy
        self.clouds_yaml = directory / "clouds.yaml"
        text = server.clouds_yaml.read_text().replace(server.url, proxy.url)
        fd = os.open(self.clouds_yaml, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)

    def connect(self):
        import openstack.config
        from openstack import connection
        cfg = openstack.config.OpenStackConfig(config_files=[str(self.clouds_yaml)])
        return connection.Connection(config=cfg.get_one(cloud="minbw-local"))

    def api(self, **policy):
        from minbw.placement.client import Placement, RetryPolicy
        return Placement(self.connect(), retry=RetryPolicy(**{**TEST_POLICY, **policy}))

    def env(self, **extra) -> dict:
        return {**os.environ, **TEST_ENV, "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": "minbw-local",
                **extra}


@pytest.fixture(scope="session")
def fault_proxy(placement_server):
    proxy = FaultProxy(placement_server.url, seed=10).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def proxied(placement, placement_server, fault_proxy, tmp_path):
    """``placement`` (direct, empty) stays the judge of the end state; ``proxied.api()`` goes through the proxy."""
    fault_proxy.clear()
    yield Proxied(placement_server, fault_proxy, tmp_path)
    fault_proxy.clear()
