"""PlacementState: start, stop and status of the embedded Placement give today's dicts, keys in the same order."""
from __future__ import annotations

from minbw.deploy.daemon import PlacementState


def test_start_dict_keys_in_order():
    state = PlacementState("start", "/s", "/s/placement.pid", 42, changed=True, url="http://127.0.0.1:8780",
                           clouds_yaml="/s/clouds.yaml", log_file="/s/placement.log")
    assert state.to_dict() == {"url": "http://127.0.0.1:8780", "clouds_yaml": "/s/clouds.yaml",
                               "pid_file": "/s/placement.pid", "log_file": "/s/placement.log", "state_dir": "/s",
                               "cloud": state.cloud, "changed": True, "pid": 42}
    assert list(state.to_dict()) == ["url", "clouds_yaml", "pid_file", "log_file", "state_dir", "cloud", "changed",
                                     "pid"]


def test_stop_dict_keys_in_order():
    assert list(PlacementState("stop", "/s", "/s/placement.pid", None).to_dict().items()) == [
        ("changed", False), ("pid", None), ("pid_file", "/s/placement.pid"), ("state_dir", "/s")]


def test_status_dict_keys_in_order():
    state = PlacementState("status", "/s", "/s/placement.pid", 7, ours=True, url="http://127.0.0.1:1", port=1,
                           port_in_use=True, clouds_yaml="/s/clouds.yaml")
    assert list(state.to_dict().items()) == [
        ("running", False), ("pid", 7), ("ours", True), ("url", "http://127.0.0.1:1"), ("port", 1),
        ("port_in_use", True), ("state_dir", "/s"), ("pid_file", "/s/placement.pid"),
        ("clouds_yaml", "/s/clouds.yaml"), ("cloud", state.cloud)]
