"""Nova leaves a failed cold migration's source allocation on its migration record after the server is deleted.

Issue 47 (docs/soak.md, "Five minutes on the mini-cloud"): a cold migration failed while Placement was down, the
server was then deleted, and the migration's consumer kept the source host's allocation. This script runs that
sequence, deterministically, against a running mini-cloud with two computes in service (the e2e fixtures'
``cloud_two_hosts``: ``cloud.sh up`` then ``cloud.sh activate-spare``):

1. a server boots on devstack0 (the plain flavor ``e2e-tiny``; with ``--kbps N`` also a port whose QoS policy
   guarantees N kbps each way, as the soak's servers had);
2. devstack1's nova-compute is paused (SIGSTOP of its process group) so that it takes no RPC message yet;
3. ``POST /servers/{id}/action {"migrate": null}``: the conductor moves the server's allocation on devstack0 to the
   migration's uuid (``replace_allocation_with_migration``), the scheduler claims devstack1 for the server and the
   conductor casts ``prep_resize`` to devstack1, where it waits; the script waits until Placement shows both;
4. Placement is stopped (``cloud.sh stop-placement``), then devstack1's nova-compute continues: its ``prep_resize``
   runs with Placement down and fails, and its clean-up (``_revert_allocation``, then the reschedule through the
   conductor) cannot reach Placement either;
5. once the migration is ``error``, Placement is started again (``cloud.sh start-placement``), and the script reads
   the migration's and the server's allocations, then deletes the server and reads them again, with Nova's list of
   the server's migrations (``GET /os-migrations``, compute 2.59);
6. ``minbw audit`` (read-only) runs and names what it finds; with ``--log-wait S`` the script waits up to S seconds
   for devstack0's nova-compute to log ``has allocations against this compute host but is not found in the
   database`` for the migration (its periodic task runs every 60 s); with ``--remove nova-manage``, ``nova-manage
   placement audit --verbose --delete --resource_provider RP`` runs for each provider the migration holds (the
   source's root, then its bridge); with ``--remove minbw-fix``, ``minbw audit --fix`` (which trims the bandwidth),
   then that nova-manage for the root; the migration's allocations are read after each.

``--stop-at before`` stops Placement before the migration is asked for instead (nova-api's own read of Placement
fails: 500, nothing moves); ``--stop-at confirm`` lets the migration reach VERIFY_RESIZE and stops Placement before
the confirm (``confirm_resize`` fails on the source, and its deletion of the migration's allocation with it): the
other moments tried, each with what Placement held.

Run with the project's venv (openstacksdk, minbw) against the running cloud::

    PYTHONPATH=python .venv/bin/python tests/support/minicloud/repro_migration_leak.py --state .state/minicloud

One line per step; the last is JSON (what tests/e2e/test_migration_leak_cloud.py checks). Exit 0 when the sequence
ran as described (for ``prep_resize``: the migration's consumer kept its allocation after the server was deleted;
the other moments are recorded, not judged), 1 when a step did not happen as expected (said on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
from tests.support.minicloud.envfile import read_env  # noqa: E402
from tests.support.repro import report  # noqa: E402

SOURCE, TARGET = "devstack0", "devstack1"
PLACEMENT = "1.28"
# a log record's first line: date, time, pid, level, logger, [request context], message
RECORD = re.compile(r"(?P<head>\S+ \S+) \d+ (?P<level>[A-Z]+ \S+) \[[^\]]*req-[^\]]*\] (?P<message>.*)")
COMPUTE = "2.59"  # migrations' uuids


class Failed(Exception):
    pass


class Repro:
    def __init__(self, state: Path):
        self.state = state
        self.env = {**os.environ, **read_env(state / "env")}
        self.t0 = time.monotonic()
        self.made: dict[str, list] = {"servers": [], "ports": [], "policies": []}
        self.placement_down = False
        import openstack.config
        from openstack import connection
        warnings.filterwarnings("ignore")
        cfg = openstack.config.OpenStackConfig(config_files=[self.env["OS_CLIENT_CONFIG_FILE"]])
        self.conn = connection.Connection(config=cfg.get_one(cloud="minicloud"))

    def say(self, text: str) -> None:
        print(f"{time.monotonic() - self.t0:6.1f} s  {text}", flush=True)

    # ---- reads
    def allocations(self, consumer: str) -> dict:
        """{provider name: resources} the consumer holds (Placement must be up)."""
        body = self.conn.placement.get(f"/allocations/{consumer}", microversion=PLACEMENT).json()
        return {self.names.get(rp, rp): a["resources"] for rp, a in sorted(body["allocations"].items())}

    def migrations(self, server: str) -> list[dict]:
        body = self.conn.compute.get(f"/os-migrations?instance_uuid={server}", microversion=COMPUTE).json()
        return [{k: m.get(k) for k in ("uuid", "status", "migration_type", "source_compute", "dest_compute")}
                for m in body["migrations"]]

    def server_state(self, server: str) -> dict | None:
        r = self.conn.compute.get(f"/servers/{server}", microversion=COMPUTE)
        if r.status_code == 404:
            return None
        s = r.json()["server"]
        return {"status": s["status"], "task_state": s.get("OS-EXT-STS:task_state"),
                "host": s.get("OS-EXT-SRV-ATTR:host"), "fault": (s.get("fault") or {}).get("message")}

    def wait(self, what: str, check, timeout: float, every: float = 0.5):
        end = time.monotonic() + timeout
        while True:
            got = check()
            if got:
                return got
            if time.monotonic() > end:
                raise Failed(f"{what}: not within {timeout:g} s")
            time.sleep(every)

    # ---- the cloud
    def placement(self, up: bool) -> None:
        self.cloud_sh("start-placement" if up else "stop-placement")
        self.placement_down = not up

    def cloud_sh(self, *args: str) -> None:
        r = subprocess.run(["bash", str(HERE / "cloud.sh"), *args], env=self.env, capture_output=True, text=True,
                           timeout=180, check=False)
        if r.returncode != 0:
            raise Failed(f"cloud.sh {' '.join(args)} exit {r.returncode}: {r.stderr[-2000:]}")

    def compute_group(self, host: str) -> int:
        suffix = "" if host == SOURCE else f"-{host}"
        return int((self.state / "run" / f"nova-compute{suffix}.pid").read_text())

    def log_lines(self, host: str, needle: str, start: int = 0) -> list[str]:
        """nova-compute's lines on ``host`` that hold ``needle``, from byte ``start``: a record's first line only (a
        traceback's lines carry no request id), its level, logger and message."""
        suffix = "" if host == SOURCE else f"-{host}"
        path = self.state / "log" / f"nova-compute{suffix}.log"
        out = []
        with open(path, errors="replace") as f:
            f.seek(start)
            for line in f:
                record = RECORD.match(line)
                if needle in line and record:
                    out.append(" ".join(f"{record['head']} {record['level']} {record['message']}".split())[:500])
        return out

    def log_size(self, host: str) -> int:
        suffix = "" if host == SOURCE else f"-{host}"
        return (self.state / "log" / f"nova-compute{suffix}.log").stat().st_size

    # ---- the sequence
    def boot(self, name: str, kbps: int):
        conn = self.conn
        net = conn.network.find_network("e2e-net0")
        if net is None:
            net = conn.network.create_network(name="e2e-net0", provider_network_type="vlan",
                                              provider_physical_network="physnet0", provider_segmentation_id=101)
            conn.network.create_subnet(name="e2e-subnet0", network_id=net.id, ip_version=4, cidr="10.0.5.0/24")
        flavor = conn.compute.find_flavor("e2e-tiny") or conn.compute.create_flavor(name="e2e-tiny", ram=256,
                                                                                    vcpus=1, disk=1)
        image = conn.image.find_image("e2e-image") or conn.image.create_image(
            name="e2e-image", data=b"e2e image\n", disk_format="raw", container_format="bare", wait=True)
        networks = [{"uuid": net.id}]
        if kbps:
            pol = conn.network.create_qos_policy(name=f"{name}-qp")
            self.made["policies"].append(pol.id)
            for direction in ("egress", "ingress"):
                conn.network.create_qos_minimum_bandwidth_rule(pol, min_kbps=kbps, direction=direction)
            port = conn.network.create_port(name=f"{name}-port", network_id=net.id, qos_policy_id=pol.id)
            self.made["ports"].append(port.id)
            networks = [{"port": port.id}]
        server = conn.compute.create_server(name=name, flavor_id=flavor.id, image_id=image.id, networks=networks,
                                            host=SOURCE)
        self.made["servers"].append(server.id)
        conn.compute.wait_for_server(server, status="ACTIVE", failures=["ERROR"], interval=0.5, wait=180)
        return server.id

    def run(self, stop_at: str, kbps: int, log_wait: float, remove: str | None) -> dict:
        self.names = {rp["uuid"]: rp["name"] for rp in self.conn.placement.get(
            "/resource_providers", microversion=PLACEMENT).json()["resource_providers"]}
        facts: dict = {"stop_at": stop_at, "kbps": kbps}
        name = f"leak-{stop_at}-{int(time.time())}"
        server = self.boot(name, kbps)
        facts["server"] = server
        facts["booted"] = self.allocations(server)
        self.marks = {host: self.log_size(host) for host in (SOURCE, TARGET)}
        self.say(f"server {server} ACTIVE on {SOURCE}"
                 f"{f' with a port guaranteeing {kbps} kbps each way' if kbps else ' (flavor only)'}; "
                 f"it holds {json.dumps(facts['booted'])}")
        if stop_at == "before":
            self.placement(False)
            self.say("Placement stopped; asking Nova to migrate the server")
            r = self.conn.compute.post(f"/servers/{server}/action", json={"migrate": None}, microversion=COMPUTE)
            facts["migrate_answer"] = r.status_code
            self.say(f"POST /servers/{server}/action migrate -> {r.status_code} {r.text[:200]}")
        elif stop_at == "prep_resize":
            group = self.compute_group(TARGET)
            os.killpg(group, signal.SIGSTOP)
            self.say(f"{TARGET}'s nova-compute paused (SIGSTOP to its process group {group})")
            try:
                r = self.conn.compute.post(f"/servers/{server}/action", json={"migrate": None}, microversion=COMPUTE)
                facts["migrate_answer"] = r.status_code
                self.say(f"POST /servers/{server}/action migrate -> {r.status_code}")

                def moved():
                    migs = [m for m in self.migrations(server) if m["status"] == "pre-migrating"]
                    if not migs:
                        return None
                    held = self.allocations(migs[0]["uuid"]), self.allocations(server)
                    if held[0] and any(n.startswith(TARGET) for n in held[1]):
                        return migs[0], held
                    return None
                mig, (mig_held, server_held) = self.wait("the conductor's moves in Placement", moved, 60)
                time.sleep(1.0)  # the conductor's cast of prep_resize follows the scheduler's claim
                facts["migration"] = mig["uuid"]
                facts["during"] = {"migration": mig_held, "server": server_held}
                self.say(f"migration {mig['uuid']} ({mig['status']}) holds {json.dumps(mig_held)}; the server "
                         f"holds {json.dumps(server_held)} (the scheduler's claim); prep_resize waits for {TARGET}")
                self.placement(False)
                self.say("Placement stopped")
            finally:
                os.killpg(group, signal.SIGCONT)
            self.say(f"{TARGET}'s nova-compute continues (SIGCONT)")
        elif stop_at == "confirm":
            self.conn.compute.post(f"/servers/{server}/action", json={"migrate": None}, microversion=COMPUTE)
            self.wait("VERIFY_RESIZE", lambda: (self.server_state(server) or {}).get("status") == "VERIFY_RESIZE", 120)
            mig = self.migrations(server)[0]
            facts["migration"] = mig["uuid"]
            facts["during"] = {"migration": self.allocations(mig["uuid"]), "server": self.allocations(server)}
            self.say(f"VERIFY_RESIZE: migration {mig['uuid']} holds {json.dumps(facts['during']['migration'])}, "
                     f"the server {json.dumps(facts['during']['server'])}")
            self.placement(False)
            self.say("Placement stopped; confirming the resize")
            r = self.conn.compute.post(f"/servers/{server}/action", json={"confirmResize": None},
                                       microversion=COMPUTE)
            facts["confirm_answer"] = r.status_code
            self.say(f"POST /servers/{server}/action confirmResize -> {r.status_code} {r.text[:200]}")

        def settled():
            migs = self.migrations(server)
            st = self.server_state(server)
            done = [m for m in migs if m["status"] in ("error", "confirmed", "failed", "finished")]
            if stop_at == "before" and st and st["task_state"] is None:
                return migs, st
            if done and st and st["task_state"] is None:
                return migs, st
            return None
        self.wait("the migration's end", settled, 120)
        # nova-compute may write the migration once more after the server's ERROR (a confirm's `confirmed`, then its
        # decorator's `error`): read both again 2 s later
        time.sleep(2.0)
        migs, st = self.migrations(server), self.server_state(server)
        facts["failed"] = {"migrations": migs, "server": st}
        self.say(f"the move ended: migrations {json.dumps(migs)}; server {json.dumps(st)}")
        self.placement(True)
        self.say("Placement started again")
        if not facts.get("migration") and migs:
            facts["migration"] = migs[0]["uuid"]
        mig_uuid = facts.get("migration")
        facts["after_failure"] = {"server": self.allocations(server)}
        if mig_uuid:
            facts["after_failure"]["migration"] = self.allocations(mig_uuid)
        self.say("after the failure: "
                 + (f"migration {mig_uuid} holds {json.dumps(facts['after_failure']['migration'])}; " if mig_uuid
                    else "no migration; ")
                 + f"the server holds {json.dumps(facts['after_failure']['server'])}")
        # each nova-compute's warnings and errors on the server or the migration during the move (a boot's and the
        # network's "Received unexpected event" aside)
        facts["logs"] = {}
        for host in (TARGET, SOURCE):
            lines = self.log_lines(host, server, self.marks[host]) + self.log_lines(host, mig_uuid or server,
                                                                                    self.marks[host])
            facts["logs"][host] = sorted({line for line in lines if (" ERROR " in line or " WARNING " in line)
                                          and "Received unexpected event" not in line})[-8:]
            for line in facts["logs"][host]:
                self.say(f"{host} nova-compute: {line[:300]}")
        mark = self.log_size(SOURCE)
        self.conn.compute.delete_server(server)
        self.conn.compute.wait_for_delete(self.conn.compute.get_server(server), interval=0.5, wait=120)
        self.made["servers"].remove(server)
        self.say("server deleted (openstacksdk's wait_for_delete)")
        # nova-compute's _delete_instance: the server is DELETED, then its allocations go (_complete_deletion), then
        # its row and its migrations' (instance.destroy): wait for the end of it
        self.wait("the deleted server's allocations and migrations to go",
                  lambda: self.allocations(server) == {} and self.migrations(server) == [], 30)
        facts["after_delete"] = {"server": self.allocations(server), "migrations_listed": self.migrations(server)}
        if mig_uuid:
            facts["after_delete"]["migration"] = self.allocations(mig_uuid)
        self.say(f"after the delete: the server holds {json.dumps(facts['after_delete']['server'])}; Nova lists "
                 f"its migrations as {json.dumps(facts['after_delete']['migrations_listed'])}"
                 + (f"; migration {mig_uuid} holds {json.dumps(facts['after_delete']['migration'])}" if mig_uuid
                    else ""))
        facts["audit"] = self.minbw_audit()
        if mig_uuid and log_wait:
            needle = f"Instance {mig_uuid} has allocations against this compute host but is not found"
            try:
                facts["source_log"] = self.wait(f"{SOURCE}'s log line", lambda: self.log_lines(SOURCE, needle, mark),
                                                log_wait, every=2)[:1]
                self.say(f"{SOURCE} nova-compute: {facts['source_log'][0][:300]}")
            except Failed:
                facts["source_log"] = []
                self.say(f"{SOURCE} nova-compute logged no line on {mig_uuid} within {log_wait:g} s")
        held = facts["after_delete"].get("migration")
        if remove == "nova-manage" and held:
            facts["nova_manage"] = self.nova_manage(mig_uuid, sorted(held, key=len))  # the root's name is the shortest
        elif remove == "minbw-fix" and held:
            facts["minbw_fix"] = self.minbw_fix(mig_uuid)
            facts["nova_manage"] = self.nova_manage(mig_uuid, [SOURCE])
        return facts

    def minbw_audit(self) -> dict:
        r = subprocess.run([sys.executable, "-m", "minbw.cli", "--os-cloud", "minicloud", "audit", "-f", "json"],
                           env={**self.env, "PYTHONPATH": f"{ROOT / 'python'}:{ROOT}"}, capture_output=True,
                           text=True, timeout=120, check=False)
        try:
            found = json.loads(r.stdout)["findings"]
        except (ValueError, KeyError, TypeError) as e:
            raise Failed(f"minbw audit -f json: exit {r.returncode}, no findings: {r.stdout[-500:]} "
                         f"{r.stderr[-500:]}") from e
        self.say(f"minbw audit -f json -> exit {r.returncode}, findings: {json.dumps(found)}")
        return {"exit": r.returncode, "findings": found}

    def minbw_fix(self, mig_uuid: str) -> dict:
        """``minbw audit --fix`` (its ``trim_consumer``), and what the migration holds then."""
        cmd = [sys.executable, "-m", "minbw.cli", "--os-cloud", "minicloud", "audit", "--fix", "--service-cloud",
               "minicloud-nova"]
        r = subprocess.run(cmd, env={**self.env, "PYTHONPATH": f"{ROOT / 'python'}:{ROOT}"}, capture_output=True,
                           text=True, timeout=120, check=False)
        lines = [line.strip() for line in (r.stdout + r.stderr).splitlines() if mig_uuid in line]
        out = {"exit": r.returncode, "lines": lines, "migration_holds": self.allocations(mig_uuid)}
        self.say(f"minbw audit --fix --service-cloud minicloud-nova -> exit {r.returncode}: {' | '.join(lines)}; the "
                 f"migration then holds {json.dumps(out['migration_holds'])}")
        return out

    def nova_manage(self, mig_uuid: str, providers: list[str]) -> list[dict]:
        """``nova-manage placement audit --verbose --delete --resource_provider RP`` for each of ``providers`` (names,
        in order), and what the migration holds after each: the form that touches only the source host's providers
        (without ``--resource_provider`` it goes through every provider of the cloud)."""
        by_name = {name: rp for rp, name in self.names.items()}
        out = []
        for name in providers:
            cmd = [f"{self.env['MINICLOUD_VENV']}/bin/nova-manage", "--config-file", self.env["MINICLOUD_NOVA_CONF"],
                   "placement", "audit", "--verbose", "--delete", "--resource_provider", by_name[name]]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            lines = [line.strip() for line in r.stdout.splitlines() if mig_uuid in line or "Processed" in line]
            run = {"provider": name, "exit": r.returncode, "lines": lines,
                   "migration_holds": self.allocations(mig_uuid)}
            out.append(run)
            self.say(f"nova-manage placement audit --verbose --delete --resource_provider {by_name[name]} ({name}) "
                     f"-> exit {r.returncode}: {' | '.join(lines)}; the migration then holds "
                     f"{json.dumps(run['migration_holds'])}")
        return out

    def cleanup(self) -> None:
        if self.placement_down:  # a step failed while it was stopped
            self.placement(True)
        for s in self.made["servers"]:
            self.conn.compute.delete_server(s, ignore_missing=True)
        for s in self.made["servers"]:
            self.conn.compute.wait_for_delete(self.conn.compute.get_server(s), interval=0.5, wait=120)
        for p in self.made["ports"]:
            self.conn.network.delete_port(p, ignore_missing=True)
        for p in self.made["policies"]:
            self.conn.network.delete_qos_policy(p, ignore_missing=True)


def expected(facts: dict) -> list[str]:
    """What did not happen as the docstring says (empty: as described)."""
    if facts["stop_at"] != "prep_resize":
        return []  # the other moments are recorded, not judged
    mig = facts.get("migration")
    checks = [
        (bool(facts["during"]["migration"]), "the conductor moved the server's source allocation to the migration"),
        ([m["status"] for m in facts["failed"]["migrations"]] == ["error"], "the migration ended in error"),
        (facts["after_failure"]["migration"] == facts["booted"], "after the failure the migration held what the "
                                                                 "server held on its source"),
        (facts["after_delete"]["server"] == {}, "the deleted server holds nothing"),
        (facts["after_delete"]["migration"] == facts["booted"], "the migration still holds it after the delete"),
        (mig not in {m["uuid"] for m in facts["after_delete"]["migrations_listed"]},
         "Nova no longer lists the migration"),
    ]
    if facts["kbps"]:
        findings = facts["audit"]["findings"]
        checks.append((facts["audit"]["exit"] == 3 and isinstance(findings, list)
                       and any(f.get("subject") == mig and f.get("kind") == "leaked-allocation" for f in findings),
                       "minbw audit reported the migration's consumer as a leaked allocation"))
    if "minbw_fix" in facts:
        bandwidth = {"NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"}
        rest = {rp: res for rp, res in facts["booted"].items() if not set(res) & bandwidth}
        checks.append((facts["minbw_fix"]["exit"] == 0 and facts["minbw_fix"]["migration_holds"] == rest,
                       "minbw audit --fix took the bandwidth and left the rest"))
    if "nova_manage" in facts:
        runs = facts["nova_manage"]
        checks += [(all(r["exit"] == 4 for r in runs), "each nova-manage placement audit --delete deleted (exit 4)"),
                   (runs[-1]["migration_holds"] == {}, "after them the migration holds nothing")]
    return [what for ok, what in checks if not ok]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--state", type=Path, default=Path(os.environ.get("MINICLOUD_STATE", ROOT / ".state/minicloud")))
    p.add_argument("--stop-at", choices=("prep_resize", "before", "confirm"), default="prep_resize")
    p.add_argument("--kbps", type=int, default=0, help="a QoS port guaranteeing this much each way (0: none)")
    p.add_argument("--log-wait", type=float, default=0.0,
                   help="seconds to wait for devstack0's nova-compute's line on the migration")
    p.add_argument("--remove", choices=("nova-manage", "minbw-fix"),
                   help="then remove what the migration holds: nova-manage placement audit --verbose --delete "
                   "--resource_provider RP for each provider it holds on (the root first), or minbw audit --fix (the "
                   "bandwidth), then that nova-manage for the root")
    args = p.parse_args()
    repro = Repro(args.state.resolve())
    try:
        facts = repro.run(args.stop_at, args.kbps, args.log_wait, args.remove)
    except Failed as e:
        print(f"not as described: {e}", file=sys.stderr)
        sys.exit(1)
    finally:
        repro.cleanup()
    report(facts, expected(facts))


if __name__ == "__main__":
    main()
