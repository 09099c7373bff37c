"""Least privilege on the mini-cloud, with the services' default policies (docs/security.md): a user with the
``reader`` role on a project may not list Placement's providers, read a provider's usages, list Neutron's agents
or Nova's services (refused with 403), and Neutron lists no agent to it (a listing filtered by the policy, not
refused); it may read its own project's usages (``placement:usages``). A user
with the ``service`` role may read Placement; minbw, run as the reader, says the refusal in one line."""
from __future__ import annotations

import sys
import uuid

import pytest

from tests.support import cli_forks

NAME = f"minbw-lp-{uuid.uuid4().hex[:8]}"
PASSWORD = uuid.uuid4().hex


@pytest.fixture
def users(cloud):
    """A project with a reader and a service user (the roles Keystone's bootstrap and the cloud's services made)."""
    admin = cloud.connect()
    identity = admin.identity
    project = identity.create_project(name=NAME, domain_id="default")
    made = {}
    try:
        for role in ("reader", "service"):
            user = identity.create_user(name=f"{NAME}-{role}", password=PASSWORD, domain_id="default",
                                        default_project_id=project.id)
            identity.assign_project_role_to_user(project, user, identity.find_role(role, ignore_missing=False))
            made[role] = user
        yield project, {role: cloud.connect(username=u.name, password=PASSWORD, project_name=NAME)
                        for role, u in made.items()}
    finally:
        for user in made.values():
            identity.delete_user(user)
        identity.delete_project(project)


def status(conn, service: str, path: str, **headers) -> int:
    return getattr(conn, service).get(path, headers=headers, raise_exc=False).status_code


def test_a_reader_is_refused_what_minbw_reads_and_a_service_user_is_not(cloud, users):
    project, conns = users
    reader, service = conns["reader"], conns["service"]
    placement = {"OpenStack-API-Version": "placement 1.38"}
    rp = cloud.connect().placement.get("/resource_providers", headers=placement).json()["resource_providers"][0]["uuid"]
    assert status(reader, "placement", "/resource_providers", **placement) == 403
    assert status(reader, "placement", f"/resource_providers/{rp}/usages", **placement) == 403
    assert status(reader, "placement", f"/usages?project_id={project.id}", **placement) == 200
    # Neutron filters a listing by its policy instead of refusing it: the reader sees no agent at all
    agents = reader.network.get("/agents", raise_exc=False)
    assert agents.status_code == 200 and agents.json()["agents"] == [], agents.text
    assert cloud.connect().network.get("/agents").json()["agents"]
    assert status(reader, "compute", "/os-services") == 403
    assert status(service, "placement", "/resource_providers", **placement) == 200
    assert status(service, "placement", f"/resource_providers/{rp}/usages", **placement) == 200
    # minbw as the reader: one line naming the refusal, exit 1
    env = {k: v for k, v in cloud.env.items() if k != "OS_CLOUD"}
    env.update(OS_AUTH_URL=cloud.env["MINICLOUD_KEYSTONE_URL"], OS_USERNAME=f"{NAME}-reader",
               OS_PASSWORD=PASSWORD, OS_PROJECT_NAME=NAME, OS_USER_DOMAIN_NAME="Default",
               OS_PROJECT_DOMAIN_NAME="Default", OS_REGION_NAME="RegionOne", OS_CLIENT_CONFIG_FILE="/dev/null")
    out = cli_forks.run([sys.executable, "-m", "minbw.cli", "provider", "list"], env=env,
                        capture_output=True, text=True, timeout=180)
    assert out.returncode == 1 and out.stderr.startswith("minbw: error:"), out.stdout + out.stderr
    assert "403" in out.stderr or "orbidden" in out.stderr or "policy" in out.stderr.lower(), out.stderr
