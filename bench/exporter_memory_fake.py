"""The exporter's collecting process against an in-memory fake Placement (no HTTP; every answer JSON-encoded to
bytes and decoded as the client decodes it) at N hosts: 7 providers per host (a root, 2 agents, 2 bridges, 2
SR-IOV devices: 4 bandwidth providers), one port size (the headroom counted), an empty cache; the first cycle as
serve() runs it (Loops.collect_once), three more as the collection loop does (Loops.cycle), OpenMetrics gzipped
published. Made for issue 28 (bench/results/exporter-memory-fake-placement-2026-11-28.txt), brought to the
present code for issue 46.

    TM=0 [SRC=<a tree's python dir>] .venv/bin/python bench/exporter_memory_fake.py HOSTS   # RSS, peak RSS
    BY=lineno TOP=12 .venv/bin/python bench/exporter_memory_fake.py HOSTS                 # tracemalloc, per phase
    TM=0 BODY=FILE .venv/bin/python bench/exporter_memory_fake.py HOSTS   # ... the last publication saved to FILE

RSS is read from /proc/self/status; 'with the fake built' is the fake's own data (subtract it). With TM=1
(default) each phase of every cycle reports the traced memory before it, its peak above that and what it left."""
import sys, os, gc, json, time, tracemalloc, tempfile, resource
sys.path.insert(0, os.environ.get('SRC', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python')))
from minbw.model.providers import Provider, ProviderDetail, normalize_inventory
from minbw.neutron import naming
from minbw.cache.providers import ProviderCache
from minbw.exporter.collector import Collector
from minbw.exporter.exposition import Exposition
from minbw.exporter import collector
import minbw.placement.client
_providers_of = getattr(minbw.placement.client, "providers_of", None)

H = int(sys.argv[1])
E, I = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
PPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"

class Fake:
    def __init__(self, hosts):
        self.calls = 0
        self.rps, self.traits, self.inv, self.used = [], {}, {}, {}
        for h in range(hosts):
            host = f"compute-{h:05d}"
            root = f"{h:08d}-0000-4000-8000-000000000000"
            self.add(root, host, None, root, ["COMPUTE_NODE", "OWNER_NOVA"], {"VCPU": 64})
            for k, (suffix, parent_k, traits, inv) in enumerate([
                    (":Open vSwitch agent", 0, ["CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_VNIC_TYPE_DIRECT"], {PPS: 1000}),
                    (":Open vSwitch agent:br-ex", 1, ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"], {E: 10**7, I: 10**7}),
                    (":Open vSwitch agent:br-int", 1, ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_NORMAL"], {E: 10**7, I: 10**7}),
                    (":NIC Switch agent", 0, ["CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP"], {}),
                    (":NIC Switch agent:ens5", 4, ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP"], {E: 25*10**6, I: 25*10**6}),
                    (":NIC Switch agent:ens6", 4, ["CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP"], {E: 25*10**6, I: 25*10**6})], 1):
                u = f"{h:08d}-000{k}-4000-8000-000000000000"
                parent = f"{h:08d}-000{parent_k}-4000-8000-000000000000"
                self.add(u, host + suffix, parent, root, traits, inv)
            self.used[f"{h:08d}-0002-4000-8000-000000000000"] = {E: 10000, I: 10000}
    def add(self, u, name, parent, root, traits, inv):
        self.rps.append({"uuid": u, "name": name, "generation": 3, "parent_provider_uuid": parent,
                         "root_provider_uuid": root,
                         "links": [{"rel": r, "href": f"/resource_providers/{u}/{r}"} for r in
                                   ("self", "inventories", "usages", "aggregates", "traits", "allocations")]})
        self.traits[u] = traits
        self.inv[u] = {rc: normalize_inventory({"total": t}) for rc, t in inv.items()}
    def list_providers(self, **f):
        self.calls += 1
        out = self.rps
        if "required" in f:
            out = [p for p in out if f["required"] in self.traits[p["uuid"]]]
        if "resources" in f:
            rc, n = f["resources"].split(":"); n = int(n)
            out = [p for p in out if rc in self.inv[p["uuid"]] and
                   self.inv[p["uuid"]][rc]["total"] - self.used.get(p["uuid"], {}).get(rc, 0) >= n]
        if "member_of" in f:
            out = []
        content = json.dumps({"resource_providers": out}).encode()  # the answer's bytes, as the client gets them
        if _providers_of is not None:  # the client as it is now: decoded straight into providers
            return list(_providers_of(content)["resource_providers"])
        body = json.loads(content)  # before: the whole body decoded, then the providers made
        return [Provider.from_api(p) for p in body["resource_providers"]]
    def usages_of(self, uuids, readers=4, missing_ok=False):
        self.calls += len(uuids)
        return {u: json.loads(json.dumps({rc: self.used.get(u, {}).get(rc, 0) for rc in self.inv[u]})) for u in uuids}
    def provider_details(self, providers, *, inventories=True, usages=False, readers=4, traits=True, missing_ok=False):
        for p in providers:
            self.calls += 3
            body = json.loads(json.dumps([self.traits[p.uuid], self.inv[p.uuid],
                                          {rc: self.used.get(p.uuid, {}).get(rc, 0) for rc in self.inv[p.uuid]}]))
            yield ProviderDetail(p, frozenset(body[0]) if traits else frozenset(), body[1],
                                 body[2] if usages else None, True)

api = Fake(H)
gc.collect()
def rss():
    f = dict(l.split(":", 1) for l in open("/proc/self/status"))
    return int(f["VmRSS"].split()[0]) / 1024, int(f["VmHWM"].split()[0]) / 1024
base = rss()
TM = os.environ.get("TM", "1") == "1"
if TM:
    tracemalloc.start(1)
cache = ProviderCache(tempfile.mkdtemp() + "/c.json", "x", max_age=1e12)
from minbw.usecases.exporter import PortSize
from minbw.reports.capacity.request import capacity_request
import dataclasses
_s = PortSize.parse("small=min_bw:egress:1000,min_bw:ingress:1000")
def sizes_for(o):
    req = capacity_request(qos_ports=(_s.port,), port_labels=("port size small",))
    return [(_s, dataclasses.replace(req, server=dataclasses.replace(req.server, root_required=frozenset({"COMPUTE_NODE"}))))]
col = Collector(api, sizes_for if os.environ.get("SIZES", "1") == "1" else (lambda o: []), lambda: True, cache=cache, workers=8)
ex = Exposition()
t = time.perf_counter()
import threading
from minbw.exporter.loops import Loops, Served
from minbw.exporter.collector import SlowResults
served = Served()
PH = []
def phase(obj, name, label):
    f = getattr(obj, name)
    def w(*a, **k):
        before = tracemalloc.get_traced_memory()[0]; tracemalloc.reset_peak()
        r = f(*a, **k)
        cur, pk = tracemalloc.get_traced_memory()
        PH.append(f"{label}: before {before/2**20:.1f} MiB, peak +{(pk-before)/2**20:.1f}, after +{(cur-before)/2**20:.1f}")
        return r
    setattr(obj, name, w)
if TM:
    phase(collector, "read_bandwidth", "read_bandwidth")
    phase(Collector, "_headroom_of", "headroom")
    phase(collector.metrics, "families", "families")
    phase(Served, "publish", "publish")
served.gzipped(True)  # OpenMetrics gzipped, as Prometheus asks
loops = Loops(col, lambda: SlowResults(), served, interval=90, slow_interval=300, stop=threading.Event())
for i in range(4):
    PH.append(f'--- cycle {i}')
    c = loops.collect_once() if i == 0 else loops.cycle()
    body = served.gzipped(True)
    api.used[f"{i:08d}-0002-4000-8000-000000000000"] = {E: 20000 + i, I: 10000}
    if i == 1:
        col._checked = None  # a second safety check (and the cache saved and read back)
del c
if os.environ.get("BODY"):  # the last publication as the HTTP server process holds it (OpenMetrics gzipped, without
    with open(os.environ["BODY"], "wb") as f:  # the age and # EOF a scrape adds), for bench/exporter_paced_body.py
        f.write(served.board(True, True).gzipped[True])
gc.collect()
if not TM:
    now = rss()
    print(f"hosts {H}: RSS with the fake built {base[0]:.0f} MiB (peak {base[1]:.0f}); at the end {now[0]:.0f} MiB, peak {now[1]:.0f} MiB; {time.perf_counter()-t:.0f} s")
    sys.exit()
cur, peak = tracemalloc.get_traced_memory()
snap = tracemalloc.take_snapshot()
print("\n".join(PH)); print(f"hosts {H}: traced {cur/2**20:.1f} MiB, peak {peak/2**20:.1f} MiB (gzipped body {len(body)/2**20:.1f} MiB); {time.perf_counter()-t:.0f} s; ru_maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} MiB")
for s in snap.statistics(os.environ.get("BY", "filename"))[:int(os.environ.get("TOP", "9"))]:
    print("  ", str(s).replace(os.environ.get('SRC', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'python')), ""))
import collections
cnt = collections.Counter(); size = collections.Counter()
for o in gc.get_objects():
    t = type(o).__name__; cnt[t] += 1; size[t] += sys.getsizeof(o)
print("gc-tracked objects by type (count, shallow MiB):")
for t, b in size.most_common(15):
    print(f"   {t}: {cnt[t]} {b/2**20:.1f}")
