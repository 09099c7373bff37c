"""The Nova oracle of tests/unit/nova (tests/support/oracle/nova_client.py), one process for the session,
shared by test_scheduler.py and test_owner.py."""
from __future__ import annotations

import pytest

from tests.support.oracle.nova_client import start


@pytest.fixture(scope="session")
def nova():
    oracle = start()
    yield oracle
    oracle.close()
