"""A cloud without a service says so ("One bad host never blocks the fleet", item 4): a clouds.yaml written by hand
for a Placement alone (an ``admin_token`` and ``placement_endpoint_override``, no ``has_compute: false``) made
``audit``, ``heal --dry-run`` and ``separation --flavor-*`` end with "AttributeError: 'Proxy' object has no attribute
'servers'" (or ``find_flavor``), and ``drift`` / ``segments`` with a 404 on the Placement URL's ``/v2.0/agents``.
Now each names the service, the cloud and the fix, exit 1, one line; and what runs on Placement alone with
``has_compute: false`` (``separation --hosts``, ``drift --no-neutron``) runs the same with the hand-written one."""
from __future__ import annotations

import os
import uuid

import pytest
import yaml
from keystoneauth1 import access, fixture
from keystoneauth1 import exceptions as ksa_exceptions
from keystoneauth1.identity.base import BaseIdentityPlugin
from openstack import exceptions as sdk_exceptions

from tests.conftest import MINBW, CallCounter
from tests.support import cli_forks

HOST = "ms-host0"


@pytest.fixture
def clouds(tmp_path, placement_server, placement):
    """clouds.yaml entries an operator writes by hand for the embedded Placement (noauth2: the token "admin"), and
    the one ``minbw placement serve`` writes (which says it has no Nova, no Neutron); a root provider ``HOST``."""
    placement.create_provider(str(uuid.uuid4()), HOST, None)
    url = placement_server.url
    token = {"auth_type": "admin_token", "auth": {"endpoint": url, "token": "admin"},
             "placement_endpoint_override": url}
    path = tmp_path / "clouds.yaml"
    path.write_text(yaml.safe_dump({"clouds": {
        "byhand": token,
        "said": {**token, "has_compute": False, "has_network": False},
        # no catalog and no endpoint for any other service
        "noendpoint": {"auth_type": "none", "placement_endpoint_override": url},
        # the token's endpoint is no Placement and no Neutron (a 404 to every path)
        "elsewhere": {**token, "auth": {"endpoint": f"{url}/nothing", "token": "admin"}},
    }}))
    return path


def run(clouds, cloud, *argv):
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": cloud,
           "XDG_CACHE_HOME": str(clouds.parent / "xdg-cache")}
    return cli_forks.run(MINBW + list(argv), env=env, capture_output=True, text=True, timeout=120)


COMMANDS = [
    (("audit",), "compute", "Nova"),
    (("server", "heal", "--dry-run"), "compute", "Nova"),
    (("separation", "set", "--hosts", HOST, "--flavor-qos", "m1.qos", "--dry-run"), "compute", "Nova"),
    (("separation", "set", "--hosts", HOST, "--flavor-plain", "m1.small"), "compute", "Nova"),
    (("drift", "show",), "network", "Neutron"),
    (("segment", "list"), "network", "Neutron"),
    (("segment", "sync", "--dry-run"), "network", "Neutron"),
    (("enforcement", "show", "--host", HOST), "network", "Neutron"),
]


def _said(proc, service, project, cloud):
    err = proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stdout, err)
    assert "Traceback" not in err and "AttributeError" not in err and "NotFoundException" not in err, err
    assert err.startswith("minbw: error: ") and len(err.strip().splitlines()) == 1, err
    assert f"cloud {cloud!r} has no {service} service ({project})" in err, err
    return err


@pytest.mark.parametrize("argv,service,project", COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
def test_a_hand_written_placement_cloud_names_the_missing_service_and_the_fix(clouds, argv, service, project):
    err = _said(run(clouds, "byhand", *argv), service, project, "byhand")
    assert "its one endpoint" in err and "is Placement's" in err, err
    fix = err.split("Fix: ", 1)[1]
    assert f"has_{service}: false" in fix and f"{service}_endpoint_override" in fix, fix


@pytest.mark.parametrize("argv,service,project", COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
def test_it_fails_as_the_cloud_that_says_so(clouds, argv, service, project):
    """The same commands on the entry with has_compute/has_network false: the same refusal (exit 1), told so."""
    err = _said(run(clouds, "said", *argv), service, project, "said")
    assert f"has_{service}: false" in err, err


@pytest.mark.parametrize("argv,code", [(("separation", "set", "--hosts", HOST, "--dry-run", "-f", "json"), 0),
                                       # nothing to compare there: the same refusal on both
                                       (("drift", "show", "--no-neutron", "-f", "json"), 1)])
def test_what_runs_on_placement_alone_runs_the_same_on_both(clouds, argv, code):
    by_hand, said = run(clouds, "byhand", *argv), run(clouds, "said", *argv)
    assert by_hand.returncode == said.returncode == code, (by_hand.stderr, said.stderr)
    assert by_hand.stdout == said.stdout
    assert by_hand.stderr == said.stderr
    assert by_hand.stderr == "" if code == 0 else "drift compared nothing" in by_hand.stderr


@pytest.mark.parametrize("argv,service,project", [COMMANDS[0], COMMANDS[1], COMMANDS[4], COMMANDS[5]],
                         ids=["audit", "heal", "drift", "segments"])
def test_a_cloud_without_catalog_nor_endpoint_names_the_service(clouds, argv, service, project):
    """auth_type none with Placement's override only: openstacksdk raised NotSupported (compute) or a bare
    AssertionError (network) when the proxy was made."""
    err = _said(run(clouds, "noendpoint", *argv), service, project, "noendpoint")
    assert "no service catalog" in err and f"no {service}_endpoint_override" in err, err
    assert "AssertionError" not in err and "NotSupported" not in err, err


@pytest.mark.parametrize("argv", [("drift", "show",), ("segment", "list")])
def test_an_endpoint_that_is_no_neutron_is_found_by_one_probe(clouds, argv):
    err = _said(run(clouds, "elsewhere", *argv), "network", "Neutron", "elsewhere")
    assert "answers /extensions with 404" in err, err


# ------------------------------------------------ in process: clouds with a catalog, and openstacksdk's stand-ins

def _region(clouds, cloud="byhand", **extra):
    import openstack.config
    cfg = openstack.config.OpenStackConfig(config_files=[str(clouds)])
    region = cfg.get_one(cloud=cloud)
    region.config.update(extra)
    return region


class CatalogAuth(BaseIdentityPlugin):
    """A Keystone token whose catalog lists ``services`` (service type -> public URL), without a Keystone."""

    def __init__(self, services: dict[str, str]):
        super().__init__(auth_url="http://127.0.0.1:9/identity")
        self.services = services

    def get_auth_ref(self, session, **kwargs):
        token = fixture.V3Token(project_id="p", user_id="u")
        for service_type, url in self.services.items():
            token.add_service(service_type).add_standard_endpoints(public=url, region="RegionOne")
        return access.create(body=token, auth_token="admin")  # noauth2: the admin


def catalogued(clouds, services):
    from openstack.config.cloud_region import CloudRegion
    from openstack.connection import Connection
    config = {k: v for k, v in _region(clouds).config.items() if k != "placement_endpoint_override"}
    region = CloudRegion(name="catalogued", region_name="RegionOne", config={**config, "auth_type": "password"},
                         auth_plugin=CatalogAuth(services))
    return Connection(config=region)


@pytest.mark.parametrize("extra,said", [({}, "its catalog lists no compute endpoint (interface public, region "
                                              "RegionOne)"),
                                        ({"compute": "{url}/v2.1"}, "its endpoint {url}/v2.1 is Placement's")],
                         ids=["not-listed", "listed-at-placement"])
def test_a_catalog_without_the_service_is_named(clouds, placement_server, extra, said):
    from minbw.errors import MissingService
    from minbw.usecases.audit import AuditRequest, audit
    from minbw.usecases.cloud import Cloud
    url = placement_server.url
    conn = catalogued(clouds, {"placement": url, **{k: v.format(url=url) for k, v in extra.items()}})
    cloud = Cloud(lambda: conn)
    assert not cloud.has("compute") and cloud.has("placement")
    with pytest.raises(MissingService) as e:
        audit(cloud, AuditRequest())
    assert f"cloud 'catalogued' has no compute service (Nova): {said.format(url=url)}; and audit" in str(e.value)
    assert "has_compute: false" in str(e.value) and e.value.to_dict()["service"] == "compute"


def test_a_catalog_with_the_services_is_asked_nothing_more(clouds, placement_server):
    """Nova and Neutron in the catalog (at an address nothing answers): they are there, found without a call."""
    from minbw.usecases.cloud import Cloud
    conn = catalogued(clouds, {"placement": placement_server.url, "compute": "http://127.0.0.1:9/v2.1",
                               "network": "http://127.0.0.1:9"})
    cloud = Cloud(lambda: conn)
    cloud.placement.list_providers()
    counter = CallCounter(conn)
    assert cloud.has("compute") and cloud.has("network")
    assert counter.total == 0, counter.calls


class _Disabled:
    """openstacksdk's stand-in for a service it cannot make (4.x returns it for EndpointNotFound)."""

    def __getattr__(self, item):
        raise sdk_exceptions.ServiceDisabledException("Service 'compute' is disabled because its configuration "
                                                      "could not be loaded. The service is not present in the "
                                                      "service catalog")


def _not_in_catalog(self):
    raise ksa_exceptions.EndpointNotFound("public endpoint for compute service in RegionOne region not found")


@pytest.mark.parametrize("compute", [property(lambda self: _Disabled()), property(_not_in_catalog)],
                         ids=["deferred", "raised"])
def test_a_proxy_openstacksdk_cannot_make_is_named(clouds, compute):
    from openstack.connection import Connection

    from minbw.errors import MissingService
    from minbw.usecases.cloud import Cloud

    conn_class = type("NoNova", (Connection,), {"compute": compute})
    # a hand-written endpoint of its own, so that the check reaches the proxy (never contacted: it fails first)
    region = _region(clouds, compute_endpoint_override="http://127.0.0.1:9/v2.1")
    cloud = Cloud(lambda: conn_class(config=region))
    assert not cloud.has("compute")
    with pytest.raises(MissingService) as e:
        cloud.require("compute", "audit tells live servers and migrations from leaks by asking Nova")
    assert "cloud 'byhand' has no compute service (Nova): openstacksdk finds none" in str(e.value)
    assert "has_compute: false" in str(e.value)


def test_the_embedded_cloud_and_the_hand_written_one_both_have_placement_only(clouds, placement_server):
    from openstack.connection import Connection

    from minbw.usecases.cloud import Cloud
    embedded = Cloud(placement_server.connect)
    assert not embedded.has("compute") and not embedded.has("network") and embedded.has("placement")
    assert "has_compute: false" in embedded.absent("compute")
    by_hand = Cloud(lambda: Connection(config=_region(clouds)))
    assert by_hand.has("placement") and not by_hand.has("compute") and not by_hand.has("network")


def test_placement_beside_nova_is_reached_without_version_discovery(clouds):
    """A command that reads Nova too (audit, heal) reaches Placement through the cloud region's connection, as the
    Placement-only commands do, also once openstacksdk's Connection is made: a Placement that does not answer is the
    retry policy's PlacementUnavailable (one line: cannot reach), not openstacksdk's version discovery failing with
    NotSupported ("no supported versions") after keystoneauth's warnings (the soak on the mini-cloud, docs/soak.md)."""
    from minbw.errors import PlacementUnavailable
    from minbw.usecases.cloud import Cloud
    conn = catalogued(clouds, {"placement": "http://127.0.0.1:9", "compute": "http://127.0.0.1:10/v2.1"})
    cloud = Cloud(lambda: conn, region=lambda: conn.config)
    assert cloud.has("compute") and cloud.conn is conn  # made first, as audit's and heal's require() make it
    with pytest.raises(PlacementUnavailable):
        cloud.placement.list_providers()
