"""A standalone OVN southbound database for the benchmarks: Debian's ``ovsdb-server`` with the ``OVN_Southbound``
schema (``/usr/share/ovn/ovn-sb.ovsschema``), on a unix socket in a directory of its own, started and stopped by
the section that uses it, written with ``ovn-sbctl`` as an operator would (the mini-cloud's OVN variant,
tests/support/minicloud/ovn.sh, runs its ovn-central the same way: ``ovsdb-tool create`` then ``ovsdb-server``
by hand).

Only what Neutron's OVN placement extension and ``minbw provider sync --ovn-sb-db`` read is written: ``Chassis``
rows (``name``, ``hostname``, ``other_config:ovn-bridge-mappings`` / ``ovn-cms-options``) with the one ``Encap``
row the schema requires of each (``encaps`` min 1; ``Encap`` is unique on type and ip).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from bench.common import BenchError

SCHEMA = Path("/usr/share/ovn/ovn-sb.ovsschema")
TOOLS = ("ovsdb-tool", "ovsdb-server", "ovn-sbctl")
BATCH = 250  # chassis per ovn-sbctl call (one transaction each)


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None] + ([] if SCHEMA.exists() else [str(SCHEMA)])


def quote(value: str) -> str:
    """An OVSDB string atom for ovn-sbctl's ``column:key=value`` (values hold ':', ',' and '=')."""
    return json.dumps(value)


class SouthboundDB:
    """``ovsdb-server`` on ``DIR/sb.sock`` over a fresh ``DIR/sb.db``; :attr:`db` is what ``--db`` takes."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.db = f"unix:{self.dir / 'sb.sock'}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 30) -> None:
        missing = missing_tools()
        if missing:
            raise BenchError(f"the OVN southbound database needs {', '.join(missing)}: "
                             f"apt-get install ovn-central ovn-common openvswitch-common")
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in ("sb.db", "sb.sock", "sb.ctl"):
            (self.dir / name).unlink(missing_ok=True)
        subprocess.run(["ovsdb-tool", "create", str(self.dir / "sb.db"), str(SCHEMA)], check=True,
                       capture_output=True, text=True)
        env = {**os.environ, "OVS_RUNDIR": str(self.dir), "OVS_LOGDIR": str(self.dir)}
        self.log = open(self.dir / "ovsdb-server.out", "w")
        self.proc = subprocess.Popen(
            ["ovsdb-server", str(self.dir / "sb.db"), f"--remote=punix:{self.dir / 'sb.sock'}",
             f"--unixctl={self.dir / 'sb.ctl'}", f"--log-file={self.dir / 'sb.log'}"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise BenchError(f"ovsdb-server exited ({self.proc.returncode}): "
                                 f"{(self.dir / 'ovsdb-server.out').read_text()[-2000:]}")
            if (self.dir / "sb.sock").exists():
                try:
                    self.sbctl("--timeout=3", "show")
                    return
                except BenchError:
                    pass
            if time.monotonic() > deadline:
                raise BenchError(f"the OVN southbound ovsdb-server did not answer on {self.db} within {timeout:.0f} s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()

    def sbctl(self, *args: str, timeout: float = 120) -> str:
        argv = ["ovn-sbctl", f"--db={self.db}", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise BenchError(f"ovn-sbctl {' '.join(args[:6])}{' ...' if len(args) > 6 else ''} failed "
                             f"({done.returncode}): {done.stderr.strip()[:2000]}")
        return done.stdout

    def try_sbctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["ovn-sbctl", f"--db={self.db}", *args], capture_output=True, text=True, timeout=60)

    def create_chassis(self, rows: list[tuple[str, str, dict[str, str]]]) -> None:
        """One Chassis (and its Encap: geneve, a distinct 127.x address) per (name, hostname, other_config),
        ``BATCH`` chassis per ovn-sbctl call."""
        for start in range(0, len(rows), BATCH):
            args: list[str] = []
            for i, (name, hostname, other) in enumerate(rows[start:start + BATCH], start):
                n = i + 1
                args += ["--", f"--id=@e{n}", "create", "Encap", "type=geneve",
                         f"ip={quote(f'127.{n // 65536 % 256 + 1}.{n // 256 % 256}.{n % 256}')}",
                         f"chassis_name={quote(name)}",
                         "--", "create", "Chassis", f"name={quote(name)}", f"hostname={quote(hostname)}",
                         f"encaps=@e{n}", *(f"other_config:{k}={quote(v)}" for k, v in other.items())]
            self.sbctl(*args)

    def set_other_config(self, updates: dict[str, dict[str, str]]) -> None:
        """Chassis name → other_config keys to set, in one transaction."""
        args: list[str] = []
        for name, other in updates.items():
            args += ["--", "set", "Chassis", name, *(f"other_config:{k}={quote(v)}" for k, v in other.items())]
        if args:
            self.sbctl(*args)

    def count(self, table: str = "Chassis") -> int:
        return len(self.sbctl("--bare", "--columns=_uuid", "list", table).split())
