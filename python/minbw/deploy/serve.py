"""The embedded default: the real openstack-placement on 127.0.0.1.

SQLite in a state directory, noauth2 (token ``admin``), served single-threaded
so SQLite never sees concurrent writers; requests from concurrent clients are
queued, exactly what a real single-worker Placement does.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

CLOUD_NAME = "minbw-local"
READY_PREFIX = "minbw: placement ready on "
READY_LINE = READY_PREFIX + "{url} (state {state}, cloud {cloud!r} in {clouds})"


def ready_marker(url: str) -> str:
    """What the ready line of a server on ``url`` starts with (``serve --daemon`` waits for it in the log)."""
    return f"{READY_PREFIX}{url} "


PLACEMENT_CONF = """\
[DEFAULT]
debug = False
log_file = {state}/placement.log

[api]
auth_strategy = noauth2

[placement_database]
connection = sqlite:///{state}/placement.sqlite
sync_on_startup = True
# a disposable local server: no fsync per commit (oslo.db option)
sqlite_synchronous = False
"""

CLOUDS_YAML = """\
# Written by `minbw placement serve`: the embedded real Placement (noauth2).
clouds:
  {cloud}:
    auth_type: admin_token
    auth:
      endpoint: {url}
      token: admin
    placement_endpoint_override: {url}
    # a cloud of Placement alone: commands that need Nova or Neutron say so instead of asking this endpoint
    has_compute: false
    has_network: false
    has_image: false
"""


class _Server(WSGIServer):
    # socketserver's default listen queue is 5: with more concurrent clients (`sync --workers`, several
    # claimers) the kernel dropped their connection attempts, and each retried after a second
    request_queue_size = 128


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - wsgiref's signature
        logging.getLogger("minbw.placement.access").debug(format, *args)


def write_state(state_dir: Path, url: str) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    conf = state_dir / "placement.conf"
    conf.write_text(PLACEMENT_CONF.format(state=state_dir))
    clouds = state_dir / "clouds.yaml"
    # it holds the (admin) token: readable by its owner only, also when it existed with a wider mode
    fd = os.open(clouds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(CLOUDS_YAML.format(cloud=CLOUD_NAME, url=url))
    return conf


def load_app(conf_file: Path):
    """Build placement's WSGI app exactly as its own wsgi module does."""
    from oslo_config import cfg
    from placement import conf
    from placement import db_api, deploy
    from placement.wsgi import setup_logging

    config = cfg.ConfigOpts()
    conf.register_opts(config)
    config([], project="placement", default_config_files=[str(conf_file)])
    setup_logging(config)
    db_api.configure(config)
    return deploy.loadapp(config)


def serve_placement(port: int, state_dir: str | os.PathLike, host: str = "127.0.0.1", out=sys.stdout) -> int:
    state = Path(state_dir).resolve()
    url = f"http://{host}:{port}"
    conf = write_state(state, url)
    app = load_app(conf)
    server = make_server(host, port, app, server_class=_Server, handler_class=_QuietHandler)
    stop = threading.Event()

    def _terminate(signum, frame):
        stop.set()
        # shutdown() blocks until serve_forever returns: never call it from the serving thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    print(READY_LINE.format(url=url, state=state, cloud=CLOUD_NAME, clouds=state / "clouds.yaml"), file=out, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    print("minbw: placement stopped", file=out, flush=True)
    return 0
