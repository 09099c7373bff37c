"""The role bandwidth_exporter: its config and systemd unit written (check mode: nothing, but the change is
predicted), idempotent, the config one the exporter accepts, removed with state absent. The service runs as its
own user: the config, its clouds.yaml and the TLS key readable by its group only (0640), the credentials and the
key never in the output; the endpoint's TLS, basic authentication and the drift's OVN chassis in the config. minbw
installed from the wheel into the role's own virtualenv, and the hardened unit's command run as systemd would run it."""
from __future__ import annotations

import getpass
import grp
import os
import shlex
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import yaml

from minbw.usecases.exporter import ExporterRequest
from tests.conftest import REPO


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
            "bandwidth_exporter_audit": False, "bandwidth_exporter_cloud": "admin",
            # a minbw installed otherwise: the role installs none (the next test installs it)
            "bandwidth_exporter_minbw": "/usr/local/bin/minbw", "bandwidth_exporter_venv": str(tmp_path / "venv")}
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
    assert list(etc.iterdir()) == [] and not (tmp_path / "venv").exists()


def test_check_mode_predicts_the_accounts_it_would_make(tmp_path, playbook, wheel):
    """On a host without the exporter's user and group, check mode says it would make them, the virtualenv and the
    files (it cannot name an account that does not exist yet: the owners are left to the real run); nothing is made.
    Without a wheel (and no minbw of the host's), the role says what to give it."""
    name = f"minbw-exp-{os.getpid()}"
    dirs = {"bandwidth_exporter_config_dir": str(tmp_path / "etc"), "bandwidth_exporter_unit_dir": str(tmp_path / "units"),
            "bandwidth_exporter_cache_dir": str(tmp_path / "cache"), "bandwidth_exporter_manage_service": False,
            "bandwidth_exporter_user": name, "bandwidth_exporter_group": name,
            "bandwidth_exporter_venv": str(tmp_path / "opt/minbw")}
    (tmp_path / "units").mkdir()
    for source in (str(wheel), wheel.as_uri()):  # a path on the controller, a URL
        check = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_wheel=source), check=True)
        assert not check.failed and check.changed, check.output
        assert "Make the virtualenv" in check.output and "Install minbw with its extra exporter" in check.output
    assert name not in {g.gr_name for g in grp.getgrall()}
    assert not (tmp_path / "etc").exists() and not (tmp_path / "opt").exists()
    unsaid = playbook("bandwidth_exporter_role.yml", dirs, check=True)
    assert unsaid.failed and "bandwidth_exporter_wheel: the wheel of minbw that `make dist` builds" in unsaid.output


def test_the_role_installs_minbw_into_its_venv_and_the_unit_runs_it(tmp_path, playbook, wheel, placement_server):
    """The wheel installed into a virtualenv of the role's own (check mode predicts it, a second run changes nothing,
    a rebuilt wheel is installed again, state absent removes it), and the unit as systemd would take it: the unit
    file valid (systemd-analyze verify: its ExecStart the venv's minbw), hardened (systemd-analyze security), and its
    command, with its environment, collects from the embedded Placement. systemd itself does not run here (no
    systemd as PID 1): the service is not started, and the sandbox's options are not exercised."""
    me, group = getpass.getuser(), grp.getgrgid(os.getgid()).gr_name
    venv, etc = tmp_path / "opt/minbw", tmp_path / "etc"
    dirs = {"bandwidth_exporter_config_dir": str(etc), "bandwidth_exporter_unit_dir": str(tmp_path / "units"),
            "bandwidth_exporter_cache_dir": str(tmp_path / "cache"), "bandwidth_exporter_manage_service": False,
            "bandwidth_exporter_user": me, "bandwidth_exporter_group": group, "bandwidth_exporter_config_owner": me,
            "bandwidth_exporter_create_user": False, "bandwidth_exporter_wheel": str(wheel),
            "bandwidth_exporter_venv": str(venv), "bandwidth_exporter_python": sys.executable,
            "bandwidth_exporter_clouds_yaml": str(placement_server.clouds_yaml), "bandwidth_exporter_cloud": "minbw-local",
            "bandwidth_exporter_neutron": False, "bandwidth_exporter_audit": False}
    unit = tmp_path / "units" / "minbw-exporter.service"
    unit.parent.mkdir()
    check = playbook("bandwidth_exporter_role.yml", dirs, check=True)
    assert not check.failed and check.changed and not venv.exists() and not unit.exists(), check.output
    run = playbook("bandwidth_exporter_role.yml", dirs)
    assert not run.failed and run.changed, run.output
    version = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    shown = subprocess.run([str(venv / "bin/minbw"), "--version"], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == f"minbw {version}" and (venv / "wheels" / wheel.name).is_file()

    text = unit.read_text()
    assert f"ExecStart={venv}/bin/minbw exporter --config {etc / 'exporter.yaml'}\n" in text
    assert "ProtectSystem=strict\n" in text and f"ReadWritePaths={tmp_path / 'cache'}\n" in text
    assert "CapabilityBoundingSet=\n" in text and "ProtectHome=true\n" in text
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert verify.returncode == 0 and unit.name not in verify.stderr, verify.stderr
    # its exposure, as the role's own user (here the unit runs as this test's user, root): 1.3 of 10 at most
    (tmp_path / "as-default").mkdir()
    (tmp_path / "as-default" / unit.name).write_text(text.replace(f"User={me}\n", "User=minbw-exporter\n"))
    security = subprocess.run(["systemd-analyze", "security", "--offline=true", "--threshold=13", "--no-pager",
                               str(tmp_path / "as-default" / unit.name)], capture_output=True, text=True)
    assert security.returncode == 0, security.stdout[-3000:] + security.stderr
    # the service's command with the service's environment (as this user: no account is made here)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "XDG_"))}
    env.update(line.removeprefix("Environment=").split("=", 1) for line in text.splitlines()
               if line.startswith("Environment="))
    exec_start = next(line.removeprefix("ExecStart=") for line in text.splitlines() if line.startswith("ExecStart="))
    once = subprocess.run([*shlex.split(exec_start), "--once"], capture_output=True, text=True, env=env, timeout=300)
    assert once.returncode == 0 and "minbw_collection_duration_seconds" in once.stdout, once.stderr[-3000:]

    again = playbook("bandwidth_exporter_role.yml", dirs)
    assert not again.failed and not again.changed, again.output
    check = playbook("bandwidth_exporter_role.yml", dirs, check=True)
    assert not check.failed and not check.changed, check.output
    # the same version rebuilt (other bytes): installed again
    rebuilt = tmp_path / "rebuilt" / wheel.name
    rebuilt.parent.mkdir()
    shutil.copy(wheel, rebuilt)
    with zipfile.ZipFile(rebuilt, "a") as z:
        z.comment = b"rebuilt"
    renewed = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_wheel=str(rebuilt)))
    assert not renewed.failed and renewed.changed and "Install minbw with its extra exporter" in renewed.output
    assert (venv / "wheels" / wheel.name).read_bytes() == rebuilt.read_bytes()
    subprocess.run([str(venv / "bin/minbw"), "--version"], capture_output=True, check=True)
    # made a host's exporter: the data plane's libraries (the extra dataplane) installed too, the wheel unchanged
    lacking = subprocess.run([str(venv / "bin/python"), "-c", "import ovsdbapp, pyroute2"], capture_output=True)
    assert lacking.returncode != 0
    hosted = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_wheel=str(rebuilt),
                                                          bandwidth_exporter_enforcement={"host": "compute-1"}))
    assert not hosted.failed and hosted.changed, hosted.output
    subprocess.run([str(venv / "bin/python"), "-c", "import ovsdbapp, pyroute2"], capture_output=True, check=True)
    gone = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_state="absent"))
    assert not gone.failed and gone.changed and not venv.exists() and not unit.exists(), gone.output


def test_the_role_runs_the_exporter_as_its_own_user_by_default():
    """What the defaults say (the account itself is made on a real host, as root)."""
    role = REPO / "roles" / "bandwidth_exporter"
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    assert defaults["bandwidth_exporter_user"] == "minbw-exporter" and defaults["bandwidth_exporter_create_user"]
    specs = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    assert {k: v.get("default") for k, v in specs.items() if "default" in v} == {
        k: v for k, v in defaults.items() if v is not None}
    assert set(specs) == set(defaults)


def test_a_hosts_exporter_serves_its_enforcement_checks_only(tmp_path, playbook):
    """bandwidth_exporter_enforcement: a host's exporter's config (its check's options, its interval, none of the
    cloud exporter's keys), one the exporter accepts; its unit allows netlink and is still valid; without a host
    (or with a namespace the unit cannot enter) the role stops before writing anything."""
    me, group = getpass.getuser(), grp.getgrgid(os.getgid()).gr_name
    etc, unit = tmp_path / "etc", tmp_path / "units" / "minbw-exporter.service"
    dirs = {"bandwidth_exporter_config_dir": str(etc), "bandwidth_exporter_unit_dir": str(tmp_path / "units"),
            "bandwidth_exporter_cache_dir": str(tmp_path / "cache"), "bandwidth_exporter_manage_service": False,
            "bandwidth_exporter_user": me, "bandwidth_exporter_group": group, "bandwidth_exporter_config_owner": me,
            "bandwidth_exporter_create_user": False, "bandwidth_exporter_groups": ["hugetlbfs"],
            "bandwidth_exporter_minbw": str(Path(sys.executable).parent / "minbw"),
            "bandwidth_exporter_listen_port": 9818,
            "bandwidth_exporter_enforcement": {"host": "compute-1", "backend": "openvswitch"}}
    unit.parent.mkdir()
    refused = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_enforcement={"netns": "ns1"}))
    assert refused.failed and "a host's exporter needs its host" in refused.output, refused.output
    assert not etc.exists() and not unit.exists()
    run = playbook("bandwidth_exporter_role.yml", dirs)
    assert not run.failed and run.changed, run.output
    config = yaml.safe_load((etc / "exporter.yaml").read_text())
    assert config == {"listen_address": "127.0.0.1", "listen_port": 9818, "interval": 300.0,
                      "enforcement": {"host": "compute-1", "backend": "openvswitch"}}
    request = ExporterRequest.from_config(config)
    assert (request.enforcement.host, request.enforcement.backend, request.enforcement.ovs_db, request.interval,
            request.port_sizes) == ("compute-1", "openvswitch", "unix:/run/openvswitch/db.sock", 300.0, ())
    text = unit.read_text()
    assert "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK\n" in text
    assert "SupplementaryGroups=hugetlbfs\n" in text
    verify = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert verify.returncode == 0 and unit.name not in verify.stderr, verify.stderr
    again = playbook("bandwidth_exporter_role.yml", dirs)
    assert not again.failed and not again.changed, again.output
