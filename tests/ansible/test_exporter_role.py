"""The role bandwidth_exporter: its config and systemd unit written (check mode: nothing, but the change is
predicted), idempotent, the config one the exporter accepts, removed with state absent."""
from __future__ import annotations

import yaml

from minbw.usecases.exporter import ExporterRequest


def test_bandwidth_exporter_role(tmp_path, playbook):
    dirs = {"bandwidth_exporter_config_dir": str(tmp_path / "etc"), "bandwidth_exporter_unit_dir": str(tmp_path / "units"),
            "bandwidth_exporter_cache_dir": str(tmp_path / "cache"), "bandwidth_exporter_manage_service": False,
            "bandwidth_exporter_user": __import__("getpass").getuser(),
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
    text = unit.read_text()
    assert f"ExecStart=/usr/local/bin/minbw exporter --config {config}" in text
    assert "Environment=OS_CLOUD=admin" in text and f"Environment=XDG_CACHE_HOME={tmp_path / 'cache'}" in text
    again = playbook("bandwidth_exporter_role.yml", dirs)
    assert not again.failed and not again.changed, again.output
    gone = playbook("bandwidth_exporter_role.yml", dict(dirs, bandwidth_exporter_state="absent"))
    assert not gone.failed and gone.changed and not config.exists() and not unit.exists(), gone.output
