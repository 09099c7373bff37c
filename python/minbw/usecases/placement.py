"""``minbw placement serve|stop|status``: the embedded real Placement (openstack-placement from PyPI, SQLite,
noauth2, 127.0.0.1) in the foreground or as a daemon; the ``placement_local`` role drives the same commands."""

from __future__ import annotations

from dataclasses import dataclass

from minbw.deploy import daemon
from minbw.deploy.daemon import PlacementState


@dataclass(frozen=True)
class PlacementRequest:
    state_dir: str
    port: int | None = None
    host: str = "127.0.0.1"
    pid_file: str | None = None
    log_file: str | None = None
    timeout: float | None = None


def serve(request: PlacementRequest) -> int:
    """In the foreground until interrupted (the exit code)."""
    from minbw.deploy.serve import serve_placement

    return serve_placement(request.port or daemon.DEFAULT_PORT, request.state_dir, host=request.host)


def start(request: PlacementRequest) -> PlacementState:
    """Started detached and answering, or already running (idempotent): its state (changed, pid, url, paths).
    Raises InvalidInput for a bad port, timeout or path, DaemonError when the port is taken or it does not start."""
    return daemon.start(
        request.state_dir,
        request.port or daemon.DEFAULT_PORT,
        pid_file=request.pid_file,
        log_file=request.log_file,
        timeout=daemon.START_TIMEOUT if request.timeout is None else request.timeout,
        host=request.host,
    )


def stop(request: PlacementRequest) -> PlacementState:
    """Stop the state directory's Placement (SIGTERM, then SIGKILL after the timeout) and remove its pid file:
    its state: changed, pid, pid_file, state_dir (changed False when nothing of ours runs). Raises InvalidInput
    for a bad timeout, DaemonError when it may not be stopped or would not exit."""
    return daemon.stop(
        request.state_dir,
        pid_file=request.pid_file,
        timeout=daemon.STOP_TIMEOUT if request.timeout is None else request.timeout,
    )


def status(request: PlacementRequest) -> PlacementState:
    """Read-only: whether the state directory's Placement runs and answers : its state (running, pid, ours, url,
    port, port_in_use, the paths, the cloud's name). Raises InvalidInput for a port outside 1-65535."""
    return daemon.status(request.state_dir, port=request.port, pid_file=request.pid_file, host=request.host)
