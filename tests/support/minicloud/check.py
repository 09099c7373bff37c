"""The mini-cloud's readiness checks (run by cloud.sh with the cloud's venv Python).

    check.py WHAT [ARGS]                         one check: exit 0 when satisfied, 1 when not (yet)
    check.py --wait SECONDS --pids A,B WHAT [ARGS]  the same check, repeated every 0.5 s in this one process
                                                 until it is satisfied (exit 0), one of the services A, B
                                                 (pid files in $MINICLOUD_RUN) has exited (exit 3, its name on
                                                 stdout) or SECONDS have passed (exit 4, the last reason on stdout)

One process for the whole wait: importing openstacksdk and getting a token cost about a second of CPU, which
a new process per poll paid every half second while the services it waits for were starting on the same cores.
CHECK_HOST: the host of the agent/compute checks; CHECK_HOSTS: the computes (space separated).

    check.py --serve DIR PARENT_PID              the same, for many waits, in one process: each request is a line
                                                 written to the FIFO DIR/check.in (CHECK_HOST, CHECK_HOSTS and the
                                                 arguments above, tab-separated), its answer a line written to
                                                 DIR/check.out (the exit status, a tab, the output); it ends when
                                                 PARENT_PID (cloud.sh) has exited

cloud.sh's `up` waits for about a dozen checks: one process for all of them imports openstacksdk and gets a token
once (each process cost 0.5-1 CPU s), and keeps its connection between waits.
"""
from __future__ import annotations

import calendar
import json
import os
import sys
import time
import uuid
import warnings

warnings.filterwarnings("ignore")

import openstack  # noqa: E402

NEUTRON_NS = {"Open vSwitch agent": "87ee7d5c-73bb-11e8-9008-c4d987b2a692",
              "NIC Switch agent": "87f1895c-73bb-11e8-9008-c4d987b2a692"}


class NotYet(Exception):
    pass


def need(ok: bool, why: str) -> None:
    if not ok:
        raise NotYet(why)


def check(c, what: str, args: list[str]) -> None:
    """Raise NotYet (or any error) while WHAT is not satisfied."""
    host = os.environ.get("CHECK_HOST", "devstack0")
    hosts = set(os.environ.get("CHECK_HOSTS", host).split())
    if what == "token":
        c.authorize()
    elif what == "compute-up":
        up = {s.host for s in c.compute.services() if s.binary == "nova-compute" and s.state == "up"}
        need(hosts <= up, f"nova-compute up on {sorted(up)}, not yet on {sorted(hosts - up)}")
    elif what == "compute-rp":
        for h in hosts:
            r = c.placement.get("/resource_providers?name=" + h, microversion="1.14").json()
            need(bool(r["resource_providers"]), f"no compute node provider {h} yet")
    elif what == "hypervisor":
        hv = {h.name for h in c.compute.hypervisors()}
        need(hosts <= hv, f"hypervisors {sorted(hv)}, not yet {sorted(hosts - hv)}")
    elif what == "services-up":
        services = list(c.compute.services())
        bad = [(s.binary, s.host, s.state) for s in services if s.state != "up"]
        names = {s.binary for s in services}
        computes = {s.host for s in services if s.binary == "nova-compute"}
        need(not bad, f"nova services not up: {bad}")
        need({"nova-conductor", "nova-scheduler", "nova-compute"} <= names, f"nova services registered: {sorted(names)}")
        need(hosts <= computes, f"nova-compute registered on {sorted(computes)}")
    elif what == "compute-reported":
        # the host's nova-compute wrote its service record (a heartbeat) after epoch args[0]; its state may
        # still be "down" when the service is forced down
        since = float(args[0])
        need(any(s.updated_at and calendar.timegm(time.strptime(s.updated_at[:19], "%Y-%m-%dT%H:%M:%S")) > since
                 for s in c.compute.services(binary="nova-compute", host=host)),
             f"nova-compute on {host} has not reported since it started")
    elif what == "compute-enabled":
        svc = [s for s in c.compute.services(binary="nova-compute", host=host) if s.status == "enabled"]
        rps = c.placement.get("/resource_providers?name=" + host, microversion="1.14").json()["resource_providers"]
        need(bool(svc and rps), f"nova-compute on {host} not enabled yet")
        traits = c.placement.get("/resource_providers/%s/traits" % rps[0]["uuid"], microversion="1.14").json()["traits"]
        need("COMPUTE_STATUS_DISABLED" not in traits, f"{host}'s provider still has COMPUTE_STATUS_DISABLED")
    elif what == "enable-compute":
        # enable the host's nova-compute service (a spare brought into service)
        for s in c.compute.services(binary="nova-compute", host=host):
            if s.status != "enabled":
                c.compute.enable_service(s, host, "nova-compute")
            return
        raise NotYet(f"no nova-compute service on {host}")
    elif what == "network-api":
        list(c.network.extensions())
    elif what == "image-api":
        list(c.image.images())
    elif what == "agents":
        # args: agent types that must be alive (and resources_synced when args[1] is 1)
        want = args[0].split(",") if args and args[0] else []
        synced = len(args) > 1 and args[1] == "1"
        agents = {a.agent_type: a for a in c.network.agents(host=host)}
        for t in want:
            a = agents.get(t)
            need(bool(a and a.is_alive), f"{host}: {t} not alive yet")
            need(not synced or a.resources_synced is True, f"{host}: {t} resources_synced={a.resources_synced}")
    elif what == "agent-report":
        # args: agent type, path: the agent's report as Neutron holds it, written as the emulators' status file
        (agent,) = [a for a in c.network.agents(host=host) if a.agent_type == args[0]] or [None]
        need(bool(agent and agent.is_alive), f"{host}: {args[0]} not alive")
        with open(args[1] + ".tmp", "w") as f:
            json.dump({"reported_at": time.time(), "agent_type": agent.agent_type, "host": agent.host,
                       "binary": agent.binary, "configurations": agent.configuration}, f, sort_keys=True, indent=1)
        os.replace(args[1] + ".tmp", args[1])
    elif what == "agent-inventories":
        # every device the emulators reported with a bandwidth has that inventory in placement, under neutron's
        # uuid5 provider UUIDs (agent host -> hypervisor from the report)
        for path in args:
            rep = json.load(open(path))
            conf = rep["configurations"]
            hyps = conf.get("resource_provider_hypervisors", {})
            for dev, bw in conf.get("resource_provider_bandwidths", {}).items():
                name = "%s:%s" % (hyps.get(dev, rep["host"]), dev)
                rp = uuid.uuid5(uuid.UUID(NEUTRON_NS[rep["agent_type"]]), name)
                r = c.placement.get("/resource_providers/%s/inventories" % rp, microversion="1.14")
                need(r.status_code == 200, f"no provider {name} ({rp}) yet")
                inv = r.json()["inventories"]
                for d, rc in (("egress", "NET_BW_EGR_KILOBIT_PER_SEC"), ("ingress", "NET_BW_IGR_KILOBIT_PER_SEC")):
                    want, have = bw.get(d), inv.get(rc, {}).get("total")
                    need((want or None) == have, f"{name}: {rc} total {have}, reported {want}")
    elif what == "ovn-agents":
        # every compute's OVN Controller agent (the gateway one for a gateway chassis) alive in Neutron
        alive = {a.host for a in c.network.agents() if a.agent_type.startswith("OVN Controller") and a.is_alive}
        need(hosts <= alive, f"OVN Controller agents alive: {sorted(alive)}, want {sorted(hosts)}")
    elif what == "ovn-providers":
        # every compute has a bandwidth provider of Neutron's OVN extension (HOST:OVN Controller agent:BRIDGE)
        r = c.placement.get("/resource_providers?resources=NET_BW_EGR_KILOBIT_PER_SEC:1", microversion="1.14").json()
        have = {p["name"].split(":")[0] for p in r["resource_providers"] if ":OVN Controller agent:" in p["name"]}
        need(hosts <= have, f"OVN bandwidth providers of {sorted(have)}, want {sorted(hosts)}")
    elif what == "bw-provider":
        r = c.placement.get("/resource_providers?resources=NET_BW_EGR_KILOBIT_PER_SEC:1", microversion="1.14").json()
        need(bool(r["resource_providers"]), "no provider with bandwidth inventory yet")
    else:
        sys.exit(2)


def dead(pids: list[str]) -> str | None:
    run = os.environ["MINICLOUD_RUN"]
    for name in pids:
        try:
            os.kill(int(open(os.path.join(run, name + ".pid")).read()), 0)
        except (OSError, ValueError):
            return name
    return None


class Conn:
    """The connection of a wait, kept for the next one (``--serve``); dropped when a request failed."""

    def __init__(self):
        self.conn = None


def main(argv: list[str], keep: Conn | None = None) -> int:
    keep = keep or Conn()
    wait, pids = None, []
    while argv and argv[0].startswith("--"):
        opt, value, argv = argv[0], argv[1], argv[2:]
        if opt == "--wait":
            wait = float(value)
        elif opt == "--pids":
            pids = [p for p in value.split(",") if p]
    what, args = argv[0], argv[1:]
    deadline = time.monotonic() + (wait or 0)
    last = "not checked"
    while True:
        try:
            keep.conn = keep.conn or openstack.connect(cloud="minicloud")
            check(keep.conn, what, args)
            return 0
        except NotYet as e:
            last = str(e)
        except Exception as e:  # noqa: BLE001 - a service not answering yet: a new connection next time
            last, keep.conn = f"{type(e).__name__}: {str(e)[:300]}", None
        if wait is None:
            print(last)
            return 1
        gone = dead(pids)
        if gone:
            print(gone)
            return 3
        if time.monotonic() >= deadline:
            print(last)
            return 4
        time.sleep(0.5)


def serve(fifo_dir: str, parent: int) -> int:
    """Answer the requests written to FIFO_DIR/check.in until PARENT has exited."""
    import contextlib
    import io
    import select
    keep = Conn()
    fd = os.open(os.path.join(fifo_dir, "check.in"), os.O_RDWR)  # a writer of its own: no end of file between requests
    buf = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            try:
                os.kill(parent, 0)
            except OSError:
                return 0
            continue
        buf += os.read(fd, 65536)
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            host, hosts, *argv = line.decode().split("\t")
            os.environ["CHECK_HOST"], os.environ["CHECK_HOSTS"] = host, hosts
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                try:
                    rc = main(argv, keep)
                except SystemExit as e:  # an unknown check: exit 2, as its own process would
                    rc = e.code if isinstance(e.code, int) else 1
            with open(os.path.join(fifo_dir, "check.out"), "w") as answer:
                answer.write(f"{rc}\t{' '.join(out.getvalue().split())}\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        sys.exit(serve(sys.argv[2], int(sys.argv[3])))
    sys.exit(main(sys.argv[1:]))
