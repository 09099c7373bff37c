"""A Galera node's health for HAProxy's ``option httpchk``, as Percona's clustercheck answers it (tests/support/galera/
galera.sh, GALERA_DB_CHECK=clustercheck): 200 when the node is Synced (``wsrep_local_state`` 4) and ready for
queries (``wsrep_ready`` ON), else 503, the body saying the state; 503 also when the node does not answer its socket
within ``--timeout`` seconds (a stopped mariadbd: the kernel completes a TCP connect for it, so a TCP check keeps it
UP, docs/galera.md). One query per check on a connection of its own, as clustercheck does.

    python tests/support/galera/clustercheck.py --socket RUN/mysql-1.sock --port 24597

Runs under the mini-cloud's venv (.venv-cloud: PyMySQL); listens on 127.0.0.1.
"""
from __future__ import annotations

import argparse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

QUERY = ("SHOW GLOBAL STATUS WHERE Variable_name IN "
         "('wsrep_local_state', 'wsrep_local_state_comment', 'wsrep_ready', 'wsrep_cluster_status')")


def verdict(status: dict[str, str]) -> tuple[int, str]:
    """(HTTP status, body) for a node's wsrep status variables: 200 only when Synced (4) and ready."""
    state = (f"{status.get('wsrep_local_state_comment', '?')} (wsrep_local_state "
             f"{status.get('wsrep_local_state', '?')}), wsrep_ready {status.get('wsrep_ready', '?')}, "
             f"{status.get('wsrep_cluster_status', '?')}")
    if status.get("wsrep_local_state") == "4" and status.get("wsrep_ready") == "ON":
        return 200, f"Galera node is synced: {state}\n"
    return 503, f"Galera node is not synced: {state}\n"


def node_verdict(socket_path: str, timeout: float) -> tuple[int, str]:
    import pymysql   # the mini-cloud's venv's (the tests' venv imports this module for verdict alone)

    try:
        conn = pymysql.connect(unix_socket=socket_path, user="root", connect_timeout=timeout, read_timeout=timeout,
                               write_timeout=timeout)
    except pymysql.MySQLError as e:
        return 503, f"Galera node does not answer: {e}\n"
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION wsrep_sync_wait = 0")   # never wait on the cluster to answer this
            cur.execute(QUERY)
            return verdict(dict(cur.fetchall()))
    except pymysql.MySQLError as e:
        return 503, f"Galera node does not answer: {e}\n"
    finally:
        conn.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", required=True, help="the node's unix socket (root, no password)")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--timeout", type=float, default=1.0, help="seconds the node has to answer")
    a = ap.parse_args(argv)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            code, body = node_verdict(a.socket, a.timeout)
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        do_OPTIONS = do_GET

        def log_message(self, fmt, *args):   # the state changes only would be useful; HAProxy logs them
            pass

    ThreadingHTTPServer((a.bind, a.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
