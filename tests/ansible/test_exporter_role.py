"""The role bandwidth_exporter: its config and systemd unit written (check mode: nothing, but the change is
predicted), idempotent, the config one the exporter accepts, removed with state absent. The service runs as its
own user: the config, its clouds.yaml and the TLS key readable by its group only (0640), the credentials and the
key never in the output; the endpoint's TLS, basic authentication and the drift's OVN chassis in the config."""
from __future__ import annotations

import getpass
import grp
import os
import stat

import yaml

from minbw.usecases.exporter import ExporterRequest


HASH = "$2b$04$" + "x" * 53  # a bcrypt hash's shape (the exporter checks passwords against it)
SECRET = "the-password-of-the-exporter-user"
KEY = "-----BEGIN PRIVATE KEY-----\nnot-a-real-key\n-----END PRIVATE KEY-----\n"


def test_bandwidth_exporter_role(tmp_path, playbook):
    me, group = getpass.getuser(), grp.getgrgid(os.getgid()).gr_name
    dirs = {"bandwidth_exporter_config_dir": str(tmp_path / "etc"), "bandwidth_exporter_unit_dir": str(tmp_path / "units"),
            "bandwidth_exporter_cache_dir": str(tmp_path / "cache"), "bandwidth_exporter_manage_service": False,
            # no system account made here (not root): the role's files owned by this user and group
            "bandwidth_exporter_user": me, "bandwidth_exporter_group": group, "bandwidth_exporter_config_owner": me,
            "bandwidth_exporter_create_user": False, "bandwidth_exporter_groups": ["neutron"],
            "bandwidth_exporter_clouds": {"admin": {"auth": {"auth_url": "https://keystone.example:5000/v3",
                                                             "username": "minbw-exporter", "password": SECRET}}},
            "bandwidth_exporter_tls_cert": "-----BEGIN CERTIFICATE-----\nnot-a-real-cert\n-----END CERTIFICATE-----\n",
            "bandwidth_exporter_tls_key": KEY, "bandwidth_exporter_basic_auth_users": {"prometheus": HASH},
            "bandwidth_exporter_ovn_sb_db": "ssl:192.0.2.10:6642",
            "bandwidth_exporter_ovn_sbctl": ["ovn-sbctl", "-p", "/etc/minbw/sb.key", "-c", "/etc/minbw/sb.crt",
                                             "-C", "/etc/minbw/sb-ca.crt"],
            "bandwidth_exporter_port_sizes": {"small": "min_bw:egress:1000,min_bw:ingress:1000",
                                              "sriov": "min_bw:egress:10000,vnic=direct"},
            "bandwidth_exporter_audit": False, "bandwidth_exporter_cloud": "admin"}
    config, unit = tmp_path / "etc" / "exporter.yaml", tmp_path / "units" / "minbw-exporter.service"
    unit.parent.mkdir()  # systemd's own directory: there on a controller
    check = playbook("bandwidth_exporter_role.yml", dirs, check=True, diff=True)
    assert not check.failed and check.changed and not config.exists() and not unit.exists(), check.output
    run = playbook("bandwidth_exporter_role.yml", dirs)
    assert not run.failed and run.changed, run.output
    request = ExporterRequest.from_config(yaml.safe_load(config.read_text()))
    assert [(s.name, s.vnic_type) for s in request.port_sizes] == [("small", "normal"), ("sriov", "direct")]
    assert (request.port, request.address, request.audit, request.interval, request.slow_interval) == (
        9817, "127.0.0.1", False, 90, 300)
    etc = tmp_path / "etc"
    assert request.web.cert_file == str(etc / "exporter.crt") and request.web.key_file == str(etc / "exporter.key")
    assert request.web.users == (("prometheus", HASH),)
    assert (request.ovn_sb_db, request.ovn_sbctl[0], request.ovn_chassis, request.ovs_db) == (
        "ssl:192.0.2.10:6642", "ovn-sbctl", (), None)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in etc.iterdir()}
    assert modes == {"exporter.yaml": 0o640, "clouds.yaml": 0o640, "exporter.crt": 0o644, "exporter.key": 0o640}
    assert stat.S_IMODE(etc.stat().st_mode) == 0o750 and stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    assert (etc / "exporter.key").read_text() == KEY
    assert yaml.safe_load((etc / "clouds.yaml").read_text())["clouds"]["admin"]["auth"]["password"] == SECRET
    assert SECRET not in check.output + run.output and "not-a-real-key" not in check.output + run.output
    text = unit.read_text()
    assert f"ExecStart=/usr/local/bin/minbw exporter --config {config}" in text
    assert f"User={me}\nGroup={group}\nSupplementaryGroups=neutron\n" in text
    assert f"Environment=OS_CLIENT_CONFIG_FILE={etc / 'clouds.yaml'}" in text
    assert "Environment=OS_CLOUD=admin" in text and f"Environment=XDG_CACHE_HOME={tmp_path / 'cache'}" in text
    again = playbook("bandwidth_exporter_role.yml", dirs)
    assert not again.failed and not again.changed, again.output
    gone = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_state="absent"))
    assert not gone.failed and gone.changed and not config.exists() and not unit.exists(), gone.output
    assert list(etc.iterdir()) == []


def test_check_mode_predicts_the_accounts_it_would_make(tmp_path, playbook):
    """On a host without the exporter's user and group, check mode says it would make them and write the files
    (it cannot name an account that does not exist yet: the owners are left to the real run); nothing is made."""
    name = f"minbw-exp-{os.getpid()}"
    dirs = {"bandwidth_exporter_config_dir": str(tmp_path / "etc"), "bandwidth_exporter_unit_dir": str(tmp_path / "units"),
            "bandwidth_exporter_cache_dir": str(tmp_path / "cache"), "bandwidth_exporter_manage_service": False,
            "bandwidth_exporter_user": name, "bandwidth_exporter_group": name}
    (tmp_path / "units").mkdir()
    check = playbook("bandwidth_exporter_role.yml", dirs, check=True)
    assert not check.failed and check.changed, check.output
    assert name not in {g.gr_name for g in grp.getgrall()} and not (tmp_path / "etc").exists()


def test_the_role_runs_the_exporter_as_its_own_user_by_default():
    """What the defaults say (the account itself is made on a real host, as root)."""
    from tests.conftest import REPO
    role = REPO / "roles" / "bandwidth_exporter"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert defaults["bandwidth_exporter_user"] == "minbw-exporter" and defaults["bandwidth_exporter_create_user"]
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert {k: v.get("default") for k, v in specs.items() if "default" in v} == {
        k: v for k, v in defaults.items() if v is not None}
    assert set(specs) == set(defaults)
