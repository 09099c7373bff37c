"""The peak memory of one provider listing read by the Placement client at N hosts (7 providers per host, the
shape of bench/exporter_memory_fake.py's fake: 55.5 MiB of JSON at 10,000 hosts), in a process of its own with the
exporter's allocator settings (``minbw.exporter.memory.limit_arenas``):

- ``client``: ``Placement.list_providers()`` through openstacksdk, keystoneauth and requests, as the exporter reads
  the listing, from a static HTTP server in another process that serves those bytes (and a version document);
- ``fake``: the bytes read from the file, then ``providers_of`` (what the fake Placement does).

RSS from /proc/self/status: before the listing (the client's session made and one call sent), the peak (VmHWM)
and after (the providers kept). What a real Placement's answer costs the client beyond the fake's decoding, and
what the client's handing of the answer to its decoder costs.

    SRC=<a tree's python dir> .venv/bin/python bench/exporter_listing_memory.py client|fake HOSTS
"""
import http.server
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("SRC", str(Path(__file__).resolve().parent.parent / "python")))
MODE, H = sys.argv[1], int(sys.argv[2])
LISTING = Path(os.environ.get("LISTING_DIR", "/tmp")) / f"minbw-listing-{H}.json"
SHAPE = [(0, "", None), (1, ":Open vSwitch agent", 0), (2, ":Open vSwitch agent:br-ex", 1),
         (3, ":Open vSwitch agent:br-int", 1), (4, ":NIC Switch agent", 0), (5, ":NIC Switch agent:ens5", 4),
         (6, ":NIC Switch agent:ens6", 4)]


def make() -> None:
    rps = []
    for h in range(H):
        root = f"{h:08d}-0000-4000-8000-000000000000"
        for k, suffix, parent in SHAPE:
            u = f"{h:08d}-000{k}-4000-8000-000000000000"
            rps.append({"uuid": u, "name": f"compute-{h:05d}{suffix}", "generation": 3,
                        "parent_provider_uuid": None if parent is None else f"{h:08d}-000{parent}-4000-8000-000000000000",
                        "root_provider_uuid": root,
                        "links": [{"rel": r, "href": f"/resource_providers/{u}/{r}"} for r in
                                  ("self", "inventories", "usages", "aggregates", "traits", "allocations")]})
    LISTING.write_text(json.dumps({"resource_providers": rps}))


def serve() -> None:
    body = LISTING.read_bytes()
    version = json.dumps({"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0",
                                        "status": "CURRENT", "links": [{"rel": "self", "href": ""}]}]}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            b = body if self.path.startswith("/resource_providers") else version
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_port, flush=True)
    server.serve_forever()


def status() -> dict:
    text = Path("/proc/self/status").read_text()
    return {k: int(v) / 1024 for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", text, re.M)}


def main() -> None:
    if MODE == "make":
        return make()
    if not LISTING.exists():  # made by a process of its own: its memory is not this one's peak
        subprocess.run([sys.executable, __file__, "make", str(H)], check=True)
    if MODE == "serve":
        return serve()
    import warnings
    warnings.filterwarnings("ignore")
    from minbw.exporter.memory import limit_arenas
    limit_arenas()
    from minbw.placement.client import Placement, providers_of
    server = None
    if MODE == "client":
        server = subprocess.Popen([sys.executable, __file__, "serve", str(H)], stdout=subprocess.PIPE)
        url = f"http://127.0.0.1:{int(server.stdout.readline())}"
        import openstack.connection
        conn = openstack.connection.Connection(auth_type="admin_token", auth={"endpoint": url, "token": "admin"},
                                               placement_endpoint_override=url)
        api = Placement(conn)
        api.request("get", "/", "1.0")  # the session and its connection made
    before = status()
    t = time.perf_counter()
    try:
        if MODE == "client":
            out = api.list_providers()
        else:
            content = LISTING.read_bytes()
            out = list(providers_of(content)["resource_providers"])
            del content
    finally:
        if server is not None:
            server.kill()
    after = status()
    print(f"{MODE} {H} hosts: {len(out)} providers, {LISTING.stat().st_size / 2**20:.1f} MiB of JSON; RSS before "
          f"{before['VmRSS']:.0f} MiB, peak {after['VmHWM']:.0f}, after {after['VmRSS']:.0f}: the listing's peak "
          f"+{after['VmHWM'] - before['VmRSS']:.0f} MiB, kept +{after['VmRSS'] - before['VmRSS']:.0f} MiB; "
          f"{time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
