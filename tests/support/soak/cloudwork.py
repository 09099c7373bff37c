"""The cloud topology's writers beside the claimers, the sync and the exporter (tests/support/soak/runner.py
``--topology cloud``), each a process of its own until the stop file appears, one ledger line per operation (the
fields of tests/support/soak/workload.py's ledger; ``by``: who printed the cause, ``nova`` for a server operation,
``minbw`` for minbw's command line):

    python -m tests.support.soak.cloudwork servers --ledger FILE --stop FILE --seed S --cloud minicloud
    python -m tests.support.soak.cloudwork auditor --ledger FILE --stop FILE --seed S --cloud minicloud

``servers``: keeps up to ``--max`` servers, each booted with one port whose QoS policy guarantees bandwidth (the
soak's network and policy, made by :func:`prepare`), and picks at random: boot, delete, cold migrate + confirm,
live migrate, resize (+ confirm) to the other flavor, through Nova's API (openstacksdk, as users do; the moves by
minbw.ops.server_move, which waits for each step). A server left in VERIFY_RESIZE by a failed step is confirmed
first, one in ERROR deleted.

``auditor``: ``minbw audit`` (read-only) and ``minbw server heal`` (it writes what it finds missing) in turn, as
an operator's cron would; each run's findings and heal's groups not ``ok`` are in its ledger line.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
import warnings
from pathlib import Path

from tests.support.soak.workload import Ledger, rest, run_cli

NETWORK, SUBNET, POLICY = "soak-net0", "soak-subnet0", "soak-qos"
FLAVORS = {"soak-a": dict(ram=256, vcpus=1, disk=1), "soak-b": dict(ram=512, vcpus=2, disk=1)}
IMAGE = "soak-image"
SERVER_KBPS = 500      # each server's port: 500 kbps each way (br-test: 1500 on each compute, so 3 per host)
API_TIMEOUT = 15.0     # openstacksdk's timeout of one call (a paused API: the call fails, the step is recorded)


def connect(cloud: str):
    import openstack.config
    from openstack import connection
    warnings.filterwarnings("ignore")
    cfg = openstack.config.OpenStackConfig()
    return connection.Connection(config=cfg.get_one(cloud=cloud, api_timeout=API_TIMEOUT))


def prepare(conn) -> dict:
    """The soak's network (VLAN on physnet0), QoS policy, flavors and image: made once, found after."""
    net = conn.network.find_network(NETWORK)
    if net is None:
        net = conn.network.create_network(name=NETWORK, provider_network_type="vlan",
                                          provider_physical_network="physnet0", provider_segmentation_id=177)
        conn.network.create_subnet(name=SUBNET, network_id=net.id, ip_version=4, cidr="10.0.77.0/24")
    pol = conn.network.find_qos_policy(POLICY)
    if pol is None:
        pol = conn.network.create_qos_policy(name=POLICY)
        for d in ("egress", "ingress"):
            conn.network.create_qos_minimum_bandwidth_rule(pol, min_kbps=SERVER_KBPS, direction=d)
    for name, spec in FLAVORS.items():
        conn.compute.find_flavor(name) or conn.compute.create_flavor(name=name, **spec)
    image = conn.image.find_image(IMAGE) or conn.image.create_image(
        name=IMAGE, data=b"soak image\n", disk_format="raw", container_format="bare", wait=True)
    return {"network": net.id, "policy": pol.id, "image": image.id}


def cleanup(conn) -> dict:
    """The soak's servers (named soak-*), their ports, the policy, network, flavors and image: gone."""
    gone = {"servers": 0, "ports": 0}
    servers = [s for s in conn.compute.servers() if s.name.startswith("soak-")]
    for s in servers:
        conn.compute.delete_server(s, ignore_missing=True)
    for s in servers:
        conn.compute.wait_for_delete(s, interval=1, wait=180)
        gone["servers"] += 1
    for p in list(conn.network.ports(name=None)):
        if p.name.startswith("soak-"):
            conn.network.delete_port(p, ignore_missing=True)
            gone["ports"] += 1
    pol = conn.network.find_qos_policy(POLICY)
    if pol is not None:
        conn.network.delete_qos_policy(pol, ignore_missing=True)
    net = conn.network.find_network(NETWORK)
    if net is not None:
        conn.network.delete_network(net, ignore_missing=True)
    for name in FLAVORS:
        f = conn.compute.find_flavor(name)
        if f is not None:
            conn.compute.delete_flavor(f, ignore_missing=True)
    image = conn.image.find_image(IMAGE)
    if image is not None:
        conn.image.delete_image(image, ignore_missing=True)
    return gone


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


class Servers:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.ledger = Ledger(args.ledger)
        self.conn = connect(args.cloud)
        self.made = prepare(self.conn)
        self.n = 0

    def record(self, kind: str, start: float, error: BaseException | None, **extra) -> None:
        entry = {"kind": kind, "start": start, "end": time.monotonic(), "by": "nova",
                 "outcome": "succeeded" if error is None else "failed", "rc": 0 if error is None else 1,
                 "cause": "" if error is None else one_line(error), "stderr_lines": 0 if error is None else 1,
                 "traceback": False, "stderr": "", **extra}
        self.ledger.f.write(json.dumps(entry) + "\n")

    def mine(self) -> list:
        return [s for s in self.conn.compute.servers() if s.name.startswith(f"soak-{self.args.seed}-")]

    def step(self) -> None:
        from minbw.ops import server_move
        servers = self.mine()
        # what a failed step left: a server to confirm, one in ERROR to delete, one still moving to wait for
        for s in servers:
            if s.status == "VERIFY_RESIZE":
                return self.do("confirm", s, lambda s=s: server_move.confirm(self.conn, s.id))
            if s.status == "ERROR":
                return self.do("delete", s, lambda s=s: self.delete(s))
        settled = [s for s in servers if s.status == "ACTIVE" and not s.task_state]
        if len(servers) < self.args.max and (not settled or self.rng.random() < 0.35):
            return self.boot()
        if not settled:
            time.sleep(1.0)
            return None
        s = settled[self.rng.randrange(len(settled))]
        kind = self.rng.choice(("delete", "migrate", "live_migrate", "resize"))
        if kind == "delete":
            return self.do("delete", s, lambda s=s: self.delete(s))
        if kind == "migrate":
            return self.do("migrate", s, lambda: (server_move.migrate(self.conn, s.id),
                                                  server_move.confirm(self.conn, s.id)))
        if kind == "live_migrate":
            return self.do("live_migrate", s, lambda: server_move.live_migrate(self.conn, s.id))
        other = "soak-b" if s.flavor.get("original_name") == "soak-a" else "soak-a"
        return self.do("resize", s, lambda: (server_move.resize(self.conn, s.id, other),
                                             server_move.confirm(self.conn, s.id)))

    def do(self, kind: str, server, fn) -> None:
        t = time.monotonic()
        try:
            fn()
            self.record(kind, t, None, server=server.id, host=server.compute_host)
        except Exception as e:
            self.record(kind, t, e, server=server.id, host=server.compute_host)

    def boot(self) -> None:
        self.n += 1
        name = f"soak-{self.args.seed}-{self.n}"
        t = time.monotonic()
        server = port = None
        try:
            port = self.conn.network.create_port(name=name, network_id=self.made["network"],
                                                 qos_policy_id=self.made["policy"])
            server = self.conn.compute.create_server(name=name, flavor_id=self.conn.compute.find_flavor("soak-a").id,
                                                     image_id=self.made["image"], networks=[{"port": port.id}])
            server = self.conn.compute.wait_for_server(server, status="ACTIVE", failures=["ERROR"], interval=1,
                                                       wait=180)
            self.record("boot", t, None, server=server.id, port=port.id, host=server.compute_host)
        except Exception as e:
            fault = ""
            if server is not None:
                try:
                    fault = (self.conn.compute.get_server(server.id).fault or {}).get("message", "")
                except Exception:
                    pass
            self.record("boot", t, e, server=getattr(server, "id", None), port=getattr(port, "id", None),
                        fault=fault[:300])

    def delete(self, server) -> None:
        ports = [p.id for p in self.conn.network.ports(device_id=server.id)]
        self.conn.compute.delete_server(server)
        self.conn.compute.wait_for_delete(server, interval=1, wait=120)
        for p in ports:
            self.conn.network.delete_port(p, ignore_missing=True)

    def run(self) -> None:
        while not Path(self.args.stop).exists():
            try:
                self.step()
            except Exception as e:   # a read of the servers failed (an API paused or killed): a moment later
                self.record("list", time.monotonic(), e)
                time.sleep(1.0)
            time.sleep(self.args.pause)


def auditor(args) -> None:
    ledger = Ledger(args.ledger)
    service = ["--service-cloud", f"{args.cloud}-nova"]
    turn = 0
    while not Path(args.stop).exists():
        t = time.monotonic()
        if turn % 2 == 0:
            rc, out, err = run_cli(["--os-cloud", args.cloud, "audit", *service, "-f", "json"])
            findings = []
            try:
                findings = [(f["kind"], f["subject"]) for f in json.loads(out)["findings"]]
            except (ValueError, KeyError, TypeError):
                pass
            # exit 3: findings (a read-only audit's answer, not a failure)
            ledger.record("audit", t, 0 if rc == 3 else rc, err, findings=findings, exit=rc)
        else:
            rc, out, err = run_cli(["--os-cloud", args.cloud, "server", "heal", *service, "--json"])
            acted = []
            try:
                for r in json.loads(out):
                    for g in (r.get("plan") or {}).get("groups", []):
                        if g.get("status") != "ok":
                            acted.append({"server": r.get("server"), "port": g.get("port"), "status": g.get("status"),
                                          "provider": g.get("provider"), "why": g.get("why")})
                    if r.get("error"):
                        acted.append({"server": r.get("server"), "error": r["error"][:300]})
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
            ledger.record("heal", t, 0 if rc == 3 else rc, err, acted=acted, exit=rc)
        turn += 1
        rest(args.pause, args.stop)


def main(argv: list[str]) -> int:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=["servers", "auditor"])
    p.add_argument("--ledger", type=Path, required=True)
    p.add_argument("--stop", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--cloud", default="minicloud")
    p.add_argument("--max", type=int, default=2, help="servers at most at once")
    p.add_argument("--pause", type=float, default=1.0)
    p.add_argument("--go", help="a file to wait for (the soak's start); FILE.ROLE-SEED.ready says it waits")
    args = p.parse_args(argv)
    if args.go:
        run_cli(["audit", "--help"])
        Path(f"{args.go}.{args.role}-{args.seed}.ready").touch()
        while not Path(args.go).exists() and not Path(args.stop).exists():
            time.sleep(0.1)
    try:
        Servers(args).run() if args.role == "servers" else auditor(args)
    except Exception:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
