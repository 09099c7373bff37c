"""A Prometheus of a test's own (Debian's package, tests/support/prometheus/install.sh), scraping one target every
second with the exporter role's rules loaded, and its HTTP API for instant queries; :func:`scraping` runs an exporter
process in front of it."""
from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO, free_port

ROLE_FILES = REPO / "roles" / "bandwidth_exporter" / "files"
ALERTS = ROLE_FILES / "minbw-alerts.yml"
DASHBOARD = ROLE_FILES / "minbw-dashboard.json"


def install() -> str:
    """promtool and prometheus installed (once a machine); the promtool command."""
    subprocess.run(["bash", str(REPO / "tests" / "support" / "prometheus" / "install.sh")], check=True, timeout=900)
    return "promtool"


def dashboard_exprs() -> list[str]:
    """Every query of the Grafana dashboard's panels."""
    return [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]


class Prometheus:
    def __init__(self, state: Path, target: str):
        self.port = free_port()
        config = state / "prometheus.yml"
        config.write_text(json.dumps({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(ALERTS)],
            "scrape_configs": [{"job_name": "minbw", "static_configs": [{"targets": [target]}]}]}))
        self.log = open(state / "prometheus.log", "w")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={state / 'data'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path: str, **params) -> dict:
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())

    def query(self, expr: str) -> dict:
        """``{labels as a sorted tuple: value}`` of an instant query."""
        body = self.api("query", query=expr)
        assert body["status"] == "success", body
        return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("instance", "job", "__name__"))):
                float(r["value"][1]) for r in body["data"]["result"]}

    def wait(self, expr: str, expected, timeout: float = 40):
        """Poll the instant query until its one value (or, for a dict, every labelled value) is ``expected``."""
        deadline, got = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try:
                got = self.query(expr)
            except OSError:
                got = None
            if got is not None:
                values = list(got.values())
                if (values == [expected]) if not isinstance(expected, dict) else got == expected:
                    return got
            time.sleep(0.5)
        raise AssertionError(f"{expr}: expected {expected}, got {got}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


@contextlib.contextmanager
def scraping(state: Path, argv: list[str], env: dict) -> Iterator[Prometheus]:
    """``ARGV --listen-port PORT`` (an exporter, a process of its own, its output in ``state/exporter.log``) scraped
    by a :class:`Prometheus` in ``state``; both stopped afterwards, and the exporter must then have exited 0."""
    port = free_port()
    log = open(state / "exporter.log", "w")
    exporter = subprocess.Popen([*argv, "--listen-port", str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    prom = Prometheus(state, f"127.0.0.1:{port}")
    try:
        yield prom
    finally:
        prom.stop()
        exporter.terminate()
        exporter.wait(timeout=20)
        log.close()
    assert exporter.returncode == 0, (state / "exporter.log").read_text()
