"""Where a run's CPU goes: every process it starts, daemons included, by command name.

    python tests/support/cpu_profile.py run OUT_DIR -- make test
    python tests/support/cpu_profile.py report OUT_DIR

``run`` (root only) puts the command in a cgroup of its own (cgroup v1 ``cpuacct``: the total CPU of everything it
started, the mini-clouds' services and the Placements too, which daemonize away from the process tree), samples the
cgroup's pids, and turns on the kernel's process accounting (acct(2), v3 records) for its duration. ``report``
prints the cgroup's total and the CPU seconds by command name (the kernel's 16-character ``comm``) of the
processes that were in the cgroup or descend from one that was. Process accounting is machine-wide and one file:
nothing else may use it meanwhile. A process is accounted when it exits; ``run`` waits up to 30 s for what the
command left running, and one still running after that is only in the cgroup's total.
"""
from __future__ import annotations

import collections
import ctypes
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup/cpuacct")
ACCT_V3 = struct.Struct("<BBHIIIIIIf8H16s")  # include/uapi/linux/acct.h, struct acct_v3
HZ = 100  # AHZ: the unit of ac_utime/ac_stime/ac_etime
LINGER_S = 30
PROFILING = "MINBW_CPU_PROFILE"  # set for the command: process accounting is taken (a test of this tool skips)  # how long processes the command left running may take to exit before accounting stops


class CpuGroup:
    """A cgroup v1 ``cpuacct`` group inside this process's own: the CPU seconds of everything put in it and of what
    that starts, daemons included (they stay in the group however they detach)."""

    def __init__(self, path: Path):
        self.path = path

    @staticmethod
    def own() -> Path:
        """This process's cpuacct group (a lane's group nests in a profiling run's: the run counts it too)."""
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, rel = line.split(":", 2)
            if "cpuacct" in controllers.split(","):
                return CGROUP / rel.lstrip("/")
        return CGROUP

    @classmethod
    def make(cls, name: str) -> "CpuGroup | None":
        """A new group, or None where none can be made (not root, no cgroup v1 cpuacct)."""
        path = cls.own() / f"{name}-{os.getpid()}"
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path)

    def join(self) -> None:
        """Put the calling process in the group (a Popen's preexec_fn: the child, before it runs the command)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def cpu_s(self) -> float:
        return int((self.path / "cpuacct.usage").read_text()) / 1e9

    def pids(self) -> list[int]:
        return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]

    def close(self) -> None:
        """Processes still in the group go back to the parent's; the group is removed."""
        for pid in self.pids():
            try:
                (self.path.parent / "cgroup.procs").write_text(str(pid))
            except OSError:  # it exited meanwhile
                pass
        try:
            self.path.rmdir()
        except OSError:
            pass


def _comp_t(value: int) -> int:
    """comp_t: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def read_records(path: Path) -> list[dict]:
    data = path.read_bytes()
    out = []
    for off in range(0, len(data) - ACCT_V3.size + 1, ACCT_V3.size):
        f = ACCT_V3.unpack_from(data, off)
        out.append(dict(pid=f[6], ppid=f[7], btime=f[8], end=f[8] + f[9] / HZ,
                        cpu=(_comp_t(f[10]) + _comp_t(f[11])) / HZ, comm=f[18].split(b"\0")[0].decode(errors="replace")))
    return out


def _acct(path: str | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(path.encode() if path else None) != 0:
        raise OSError(ctypes.get_errno(), f"acct({path}): {os.strerror(ctypes.get_errno())}")


def run(out: Path, cmd: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    cpu_group = CpuGroup.make("cpu-profile")
    if cpu_group is None:
        raise SystemExit(f"cpu_profile.py run: cannot make a cgroup under {CpuGroup.own()} (root and cgroup v1 "
                         "cpuacct needed)")
    group = cpu_group.path
    acct_file = out / "pacct"
    acct_file.write_bytes(b"")
    pids: set[int] = set()
    done = threading.Event()

    def sample():
        while not done.is_set():
            pids.update(int(p) for p in (group / "cgroup.procs").read_text().split())
            time.sleep(0.3)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: accounting still ends (finally)
    _acct(str(acct_file))
    started = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, preexec_fn=cpu_group.join, env=dict(os.environ, **{PROFILING: str(out)}))
        threading.Thread(target=sample, daemon=True).start()
        rc = proc.wait()
        deadline = time.monotonic() + LINGER_S  # what it left running is accounted when it exits
        while (group / "cgroup.procs").read_text().split() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        done.set()
        _acct(None)
    cpu = cpu_group.cpu_s()
    pids.update(cpu_group.pids())
    (out / "pids").write_text(" ".join(map(str, sorted(pids))))
    (out / "total").write_text(f"rc={rc} wall_s={time.monotonic() - started:.0f} cpu_s={cpu:.0f}\n")
    cpu_group.close()  # what is still running (accounted when it exits) goes back where it came from
    print(report(out))
    return rc


def report(out: Path) -> str:
    records = read_records(out / "pacct")
    roots = {int(p) for p in (out / "pids").read_text().split()}
    by_pid = collections.defaultdict(list)
    for r in records:
        by_pid[r["pid"]].append(r)

    def parent(r):  # pids are reused in a long run: the parent is the one of that pid alive when r started
        return next((p for p in by_pid.get(r["ppid"], ()) if p["btime"] - 1 <= r["btime"] <= p["end"] + 1), None)

    def counted(r, depth=0):
        if r["pid"] in roots:
            return True
        p = parent(r)
        return p is not None and depth < 64 and counted(p, depth + 1)

    by_comm: dict[str, list] = collections.defaultdict(lambda: [0, 0.0])
    for r in records:
        if counted(r):
            by_comm[r["comm"]][0] += 1
            by_comm[r["comm"]][1] += r["cpu"]
    lines = [f"cgroup: {(out / 'total').read_text().strip()}",
             f"exited processes: {sum(n for n, _ in by_comm.values())}, {sum(c for _, c in by_comm.values()):.0f} CPU s",
             f"{'CPU s':>8}  {'processes':>9}  command"]
    for comm, (n, cpu) in sorted(by_comm.items(), key=lambda kv: -kv[1][1])[:30]:
        lines.append(f"{cpu:8.1f}  {n:9d}  {comm}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) >= 4 and argv[0] == "run" and argv[2] == "--":
        return run(Path(argv[1]), argv[3:])
    if len(argv) == 2 and argv[0] == "report":
        print(report(Path(argv[1])))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
