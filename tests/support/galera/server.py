"""The Galera Placement (tests/support/galera/galera.sh) as an object for tests and bench.

Same surface as tests.support.prodplacement.server.ProdPlacement (state_dir, url, clouds_yaml, cloud, start/stop,
env, connect, pids, describe), so a test or a bench section takes either; and what only a cluster has: its nodes'
wsrep status, HAProxy's view of them, a node or an API process killed and started again, and what certification
did to Placement's retry loop (its logs and Galera's counters).
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "galera.sh"
CLOUD = "galera"
MODES = ("single-writer", "multi-writer")
DB_CHECKS = ("tcp", "mysql", "clustercheck")   # galera.sh's GALERA_DB_CHECK
NODES = (1, 2, 3)

# Placement 16.0.0's and oslo.db's log lines (debug level; GALERA_DEBUG=True, the default)
RETRY = "Retrying allocations write on resource provider generation conflict"   # placement/objects/allocation.py
RETRY_LIMIT = "Exceeded retry limit of"                                         # its warning when they run out
DB_RETRY = "Performing DB retry for function"                                   # oslo_db.api.wrap_db_retry
DEADLOCK = re.compile(r"DBDeadlock|Deadlock found when trying to get lock|WSREP detected deadlock")


def free_ports(n: int) -> list[int]:
    """n distinct free ports (the sockets held until all are picked)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _running(pid: int) -> bool:
    """As galera.sh's alive (kill -0): a process of that pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def state_dir_for(prefix: str = "minbw-galera-") -> Path:
    """A state directory the user nobody can reach (the joiners' rsync daemon runs as nobody): not under
    pytest's tmp_path, whose root is 0700."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    return path


@contextmanager
def running(**settings) -> Iterator[GaleraPlacement]:
    """A GaleraPlacement of ``settings`` in a state directory of its own (:func:`state_dir_for`), started, stopped
    at the end, its state removed unless ``MINBW_GALERA_KEEP=1`` (a test module's cluster fixture)."""
    server = GaleraPlacement(state_dir_for(), **settings)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        if os.environ.get("MINBW_GALERA_KEEP") != "1":
            shutil.rmtree(server.state_dir, ignore_errors=True)


class GaleraPlacement:
    """openstack-placement 16.0.0, two uWSGI API processes of ``workers`` workers each, behind HAProxy, on a
    three-node MariaDB Galera cluster behind HAProxy (``mode``: ``single-writer``, kolla-ansible's default, or
    ``multi-writer``); each node's datadir on a file system of ``datadir_size_mb`` MB of its own when given;
    upstream's ``allocation_conflict_retry_count`` (10) unless ``conflict_retries`` says
    otherwise; stock, or ``patched`` with patches/placement/*.patch; HAProxy's check of the nodes ``db_check`` and
    Placement's sessions' ``sync_wait`` (galera.sh's GALERA_DB_CHECK and GALERA_SYNC_WAIT; None: galera.sh's
    defaults, clustercheck and 1, docs/galera.md).

    Ports are free ones picked here, so it never clashes with a ``make galera-up`` instance.
    """

    def __init__(self, state_dir: Path, *, mode: str = "single-writer", workers: int = 2, conflict_retries: int = 10,
                 patched: bool | None = None, debug: bool = True, datadir_size_mb: int | None = None,
                 db_check: str | None = None, sync_wait: int | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.state_dir = Path(state_dir)
        self.mode = mode
        self.workers = workers
        self.conflict_retries = conflict_retries
        # None: as GALERA_PATCHED says (PRODPLACEMENT_PATCHED when it is unset), stock by default
        env = os.environ.get("GALERA_PATCHED", os.environ.get("PRODPLACEMENT_PATCHED", "0"))
        self.patched = env == "1" if patched is None else patched
        self.debug = debug
        # each node's datadir on an ext4 file system of its own of this size (GALERA_DATADIR_SIZE_MB: the disk-full
        # fault of tests/support/galera/faults.py); None: plain directories
        self.datadir_size_mb = datadir_size_mb
        # HAProxy's check of the mariadb members (galera.sh's GALERA_DB_CHECK) and the nodes' wsrep_sync_wait
        # (GALERA_SYNC_WAIT); None: galera.sh's defaults
        if db_check not in (None, *DB_CHECKS):
            raise ValueError(f"db_check must be one of {DB_CHECKS}, got {db_check!r}")
        self.db_check = db_check
        self.sync_wait = sync_wait
        ports = free_ports(19)
        self.node_ports, self.gcomm_ports, self.ist_ports, self.sst_ports = (ports[0:3], ports[3:6], ports[6:9],
                                                                             ports[9:12])
        self.api_ports, self.db_port, self.port = ports[12:14], ports[14], ports[15]
        self.check_ports = ports[16:19]   # each node's clustercheck responder (GALERA_DB_CHECK=clustercheck)
        self.url = f"http://127.0.0.1:{self.port}"
        self.clouds_yaml = self.state_dir / "clouds.yaml"
        self.cloud = CLOUD
        self.log = self.state_dir / "galera.out"

    def _script_env(self) -> dict:
        def words(ports):
            return " ".join(map(str, ports))
        return {**os.environ, "GALERA_STATE": str(self.state_dir), "GALERA_MODE": self.mode,
                "GALERA_WORKERS": str(self.workers), "GALERA_CONFLICT_RETRIES": str(self.conflict_retries),
                "GALERA_PATCHED": "1" if self.patched else "0", "GALERA_DEBUG": "True" if self.debug else "False",
                "GALERA_NODE_PORTS": words(self.node_ports), "GALERA_GCOMM_PORTS": words(self.gcomm_ports),
                "GALERA_IST_PORTS": words(self.ist_ports), "GALERA_SST_PORTS": words(self.sst_ports),
                "GALERA_API_PORTS": words(self.api_ports), "GALERA_DB_PORT": str(self.db_port),
                "GALERA_PORT": str(self.port), "GALERA_DATADIR_SIZE_MB": str(self.datadir_size_mb or ""),
                "GALERA_CHECK_PORTS": words(self.check_ports),
                **({"GALERA_DB_CHECK": self.db_check} if self.db_check else {}),
                **({"GALERA_SYNC_WAIT": str(self.sync_wait)} if self.sync_wait is not None else {})}

    def script(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SCRIPT), *args], env=self._script_env(), capture_output=True, text=True,
                              timeout=timeout)

    def start(self, timeout: float = 900) -> None:
        """``galera.sh up`` (installs on a fresh machine: apt mariadb-server galera-4 haproxy rsync, .venv-cloud)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        r = self.script("up", timeout=timeout)
        self.log.write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"galera.sh up failed ({r.returncode}):\n{r.stderr[-4000:]}")

    def stop(self) -> None:
        self.script("down", timeout=180)

    def describe(self) -> str:
        return (f"openstack-placement 16.0.0 {'patched (patches/placement)' if self.patched else 'stock'}, "
                f"allocation_conflict_retry_count {self.conflict_retries}, 2 API processes x {self.workers} uWSGI "
                f"workers behind HAProxy, MariaDB Galera 3 nodes ({self.mode}, HAProxy's check of the nodes "
                f"{self.setting('GALERA_DB_CHECK')}, wsrep_sync_wait {self.setting('GALERA_SYNC_WAIT')})")

    def setting(self, name: str) -> str:
        """A setting galera.sh up wrote to its env file (``GALERA_DB_CHECK``, ...): what this cluster runs with,
        galera.sh's defaults included; ``unknown`` before the first up."""
        env = self.state_dir / "env"
        for line in env.read_text().splitlines() if env.exists() else []:
            if line.startswith(f"export {name}="):
                return line.split("=", 1)[1].strip('"')
        return "unknown"

    def status(self) -> str:
        return self.script("status", timeout=60).stdout

    # ---------------------------------------------------------------- the cluster
    def kill_node(self, n: int) -> None:
        r = self.script("kill-node", str(n), timeout=30)
        if r.returncode:
            raise RuntimeError(r.stderr)

    def start_node(self, n: int, timeout: float = 300) -> None:
        r = self.script("start-node", str(n), timeout=timeout)
        if r.returncode:
            raise RuntimeError(f"galera.sh start-node {n} failed:\n{r.stderr[-4000:]}")

    def kill_api(self, a: int) -> None:
        """SIGKILL Placement API process ``a`` (1 or 2): its uWSGI master and workers."""
        r = self.script("kill-api", str(a), timeout=30)
        if r.returncode:
            raise RuntimeError(r.stderr)

    def start_api(self, a: int, timeout: float = 180) -> None:
        """Start API process ``a`` again; returns once it answers and HAProxy has every server UP."""
        r = self.script("start-api", str(a), timeout=timeout)
        if r.returncode:
            raise RuntimeError(f"galera.sh start-api {a} failed:\n{r.stderr[-4000:]}")

    def node_log(self, n: int) -> str:
        """Node n's MariaDB error log (its wsrep messages: state transfers, membership)."""
        path = self.state_dir / "log" / f"mariadb-{n}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def rejoined_by(self, n: int, since: int = 0) -> str:
        """How node n received the state it missed, from its log after character ``since``: ``IST`` (the
        writesets from a donor's gcache: "IST received"), ``SST`` (a full copy: "SST received" without IST),
        else ``unknown``."""
        text = self.node_log(n)[since:]
        if "IST received" in text:
            return "IST"
        return "SST" if "SST received" in text else "unknown"

    def sql(self, n: int, query: str) -> str:
        """A query on node n (its socket, root), tab-separated rows without header."""
        r = subprocess.run(["mariadb", f"--socket={self.state_dir / 'run' / f'mysql-{n}.sock'}", "-uroot", "-N",
                            "-B", "-e", query], capture_output=True, text=True, timeout=30)
        if r.returncode:
            raise RuntimeError(f"node {n}: {r.stderr}")
        return r.stdout

    def wsrep(self, n: int) -> dict[str, str]:
        """Node n's wsrep status variables (wsrep_cluster_size, wsrep_local_state_comment, ...)."""
        return dict(line.split("\t", 1) for line in self.sql(n, "SHOW GLOBAL STATUS LIKE 'wsrep%'").splitlines()
                    if "\t" in line)

    def db_url(self, node: int | None = None) -> str:
        """The SQLAlchemy URL Placement's placement.conf uses (through HAProxy's mariadb frontend), or node
        ``node``'s own port with the same user (to read what one node holds)."""
        port = self.db_port if node is None else self.node_ports[node - 1]
        return f"mysql+pymysql://placement:galera-db@127.0.0.1:{port}/placement"

    def set_globals(self, settings: dict[str, int | str]) -> None:
        """MariaDB global variables (``wsrep_sync_wait``: causality checks, 1 reads, 2 updates and deletes, 4
        inserts, a bit mask; ``tx_isolation``, MariaDB 10.11's name: ``READ-COMMITTED``, ...) set on every running
        node, then both Placement API processes restarted so that their connections (a session takes the global
        values when it connects) are new ones."""
        for name, value in settings.items():
            if not re.fullmatch(r"[a-z_]+", name) or not re.fullmatch(r"[A-Za-z0-9_-]+", str(value)):
                raise ValueError(f"not a MariaDB variable setting: {name}={value!r}")
            literal = str(value) if isinstance(value, int) else f"'{value}'"
            for n in NODES:
                if self.node_alive(n):
                    self.sql(n, f"SET GLOBAL {name} = {literal}")
        for a in (1, 2):
            pid = self.pid(f"placement-{a}")
            self.kill_api(a)
            end = time.time() + 30
            while _running(pid):   # the killed master reaped (galera.sh start-api refuses a running one)
                if time.time() > end:
                    raise RuntimeError(f"placement-{a} (pid {pid}) still running 30 s after SIGKILL")
                time.sleep(0.2)
            self.start_api(a)

    def node_alive(self, n: int) -> bool:
        return self._alive(f"galera-{n}")

    def api_alive(self, a: int) -> bool:
        return self._alive(f"placement-{a}")

    def _alive(self, service: str) -> bool:
        try:
            os.kill(self.pid(service), 0)
            return True
        except (OSError, ValueError):
            return False

    def via_haproxy(self, query: str) -> str:
        """A query through HAProxy's mariadb frontend (a new connection), as Placement connects."""
        r = subprocess.run(["mariadb", "-h", "127.0.0.1", "-P", str(self.db_port), "-uplacement", "-pgalera-db", "-N",
                            "-B", "placement", "-e", query], capture_output=True, text=True, timeout=30)
        if r.returncode:
            raise RuntimeError(r.stderr)
        return r.stdout.strip()

    def haproxy_servers(self) -> dict[tuple[str, str], dict[str, str]]:
        """HAProxy's ``show stat``: (proxy, server) -> its fields (status, bck, stot: sessions served, ...)."""
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.state_dir / "run" / "haproxy.sock"))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        lines = data.decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        out = {}
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            if row.get("svname") not in (None, "FRONTEND", "BACKEND"):
                out[(row["pxname"], row["svname"])] = row
        return out

    def certification(self) -> dict[str, int]:
        """Galera's counters summed over the running nodes: transactions that failed certification
        (wsrep_local_cert_failures) and local transactions aborted by replicated ones (wsrep_local_bf_aborts)."""
        total = {"wsrep_local_cert_failures": 0, "wsrep_local_bf_aborts": 0}
        for n in NODES:
            if self.node_alive(n):
                w = self.wsrep(n)
                for k in total:
                    total[k] += int(w.get(k, 0))
        return total

    # ---------------------------------------------------------------- Placement's processes and logs
    def pid(self, service: str) -> int:
        return int((self.state_dir / "run" / f"{service}.pid").read_text())

    def worker_pids(self) -> list[int]:
        """Both API processes' uWSGI workers (children of each master)."""
        out = []
        for a in (1, 2):
            ps = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.pid(f"placement-{a}"))],
                                capture_output=True, text=True).stdout
            out += [int(p) for p in ps.split()]
        return out

    def pids(self) -> list[int]:
        """Every process serving Placement: uWSGI masters and workers, the Galera nodes, HAProxy (CPU accounting)."""
        return [self.pid("placement-1"), self.pid("placement-2"), *self.worker_pids(), self.pid("haproxy"),
                *(self.pid(f"galera-{n}") for n in NODES if self.node_alive(n))]

    def env(self) -> dict:
        return {**os.environ, "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": self.cloud}

    def connect(self):
        import openstack.config
        from openstack import connection
        cfg = openstack.config.OpenStackConfig(config_files=[str(self.clouds_yaml)])
        return connection.Connection(config=cfg.get_one(cloud=self.cloud))

    def request_log(self, api: int) -> str:
        """uWSGI's request log of API process ``api`` (1 or 2)."""
        return (self.state_dir / "log" / f"placement-{api}.out").read_text(errors="replace")

    def placement_log(self, api: int) -> str:
        return (self.state_dir / "log" / f"placement-{api}" / "placement.log").read_text(errors="replace")

    def log_counts(self) -> dict[str, int]:
        """What Placement's two processes logged so far: allocation writes retried on a generation conflict,
        retry limits exhausted, oslo.db retries (its deadlock retries), log lines naming a deadlock (Galera's
        certification failures surface as MySQL error 1213; a traceback names it on several lines), the deadlocks
        oslo.db retried and those answered 500, and HTTP 500 answers (uWSGI's request logs)."""
        logs = [self.placement_log(a) for a in (1, 2)]
        requests = [self.request_log(a) for a in (1, 2)]
        return {"retries": sum(t.count(RETRY) for t in logs),
                "retry_limit": sum(t.count(RETRY_LIMIT) for t in logs),
                "db_retries": sum(t.count(DB_RETRY) for t in logs),
                "deadlocks": sum(1 for t in logs for line in t.splitlines() if DEADLOCK.search(line)),
                # the deadlocks (MySQL 1213) oslo.db retried, and those Placement answered 500 for (at commit)
                "deadlocks_retried": sum(1 for t in logs for line in t.splitlines()
                                         if "oslo_db.api" in line and "DB error:" in line and "(1213," in line),
                "deadlocks_500": sum(1 for t in logs for line in t.splitlines()
                                     if "Placement API unexpected error:" in line and "(1213," in line),
                "http_500": sum(len(re.findall(r"\(HTTP/1\.[01] 5\d\d\)", t)) for t in requests),
                "requests": sum(len(re.findall(r"^\[pid: \d+\|app", t, re.M)) for t in requests)}

    def serving_apis(self) -> set[int]:
        """The API processes (1, 2) whose request log shows requests."""
        return {a for a in (1, 2) if re.search(r"^\[pid: \d+\|app", self.request_log(a), re.M)}
