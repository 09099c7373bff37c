"""One read of an OVSDB database through ovsdbapp, shared by the Open vSwitch and the OVN northbound readers.

The schema is the server's own (``idlutils.get_schema_helper``: the ``get_schema`` call), only the tables and
columns a reader asks for are monitored, and the rows are taken under the connection's lock once the first
dump is in (``Connection.start`` waits for it); then the connection is closed. Nothing is written.

A remote is ``unix:PATH``, ``tcp:HOST:PORT`` or ``ssl:HOST:PORT`` (with the client's key, certificate and CA
certificate). Before ovsdbapp is asked for the schema, the remote is opened once with the ovs library's own stream
(what ovsdbapp opens), so that a socket that is missing, refuses us or does not answer is named in one line
(ovsdbapp only logs the reason and raises "Could not retrieve schema").
"""

from __future__ import annotations

import errno
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from minbw.errors import DataPlaneUnreadable, MissingDependency

SCHEMES = ("unix:", "tcp:", "ssl:")
TIMEOUT = 10.0  # seconds: to connect, and for the first dump
T = TypeVar("T")

_WHY = {
    errno.ENOENT: "no such socket",
    errno.EACCES: "permission denied (the socket's mode or owner)",
    errno.EPERM: "permission denied",
    errno.ECONNREFUSED: "connection refused (is ovsdb-server running?)",
    errno.ETIMEDOUT: "no answer",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}


@dataclass(frozen=True)
class Ssl:
    """The files an ``ssl:`` remote needs (as ovs-vsctl's --private-key, --certificate, --ca-cert)."""

    private_key: str
    certificate: str
    ca_cert: str


def read(
    remote: str,
    schema: str,
    tables: Mapping[str, Sequence[str]],
    take: Callable[[Mapping[str, Any]], T],
    timeout: float = TIMEOUT,
    ssl: Ssl | None = None,
    conditions: Mapping[str, list] | None = None,
) -> T:
    """``take`` applied to the idl's tables (``{name: table}``, rows in ``table.rows``) of the database ``schema``
    at ``remote``, monitoring ``tables`` (``{table: [column, ...]}``) only. ``conditions``: table -> the clauses
    a row must meet one of (OVSDB's ``monitor_cond``: ``[["name", "==", "x"], ...]``; [] matches no row), so that
    the server sends only those rows."""
    stream, connection, idlutils, exceptions = _ovsdbapp()
    check(remote)
    if remote.startswith("ssl:"):
        if ssl is None:
            raise DataPlaneUnreadable(
                "an ssl: remote needs the client's private key, certificate and CA certificate", remote
            )
        stream.Stream.ssl_set_private_key_file(ssl.private_key)
        stream.Stream.ssl_set_certificate_file(ssl.certificate)
        stream.Stream.ssl_set_ca_cert_file(ssl.ca_cert)
    error, probe = stream.Stream.open_block(stream.Stream.open(remote), int(timeout * 1000))
    if error:
        raise DataPlaneUnreadable(f"cannot connect: {_WHY.get(error, os.strerror(error))}", remote)
    probe.close()
    try:
        helper = idlutils.get_schema_helper(remote, schema)
    except Exception:  # ovsdbapp raises a bare Exception when no remote gives the schema (the reason is logged)
        raise DataPlaneUnreadable(f"the server has no {schema} database", remote) from None
    for table, columns in tables.items():
        if table not in helper.schema_json["tables"]:
            raise DataPlaneUnreadable(f"the {schema} database has no {table} table", remote)
        helper.register_columns(table, list(columns))
    idl = connection.OvsdbIdl(remote, helper)
    for table, clauses in (conditions or {}).items():
        idl.cond_change(table, list(clauses))  # sent with the first monitor request
    conn = connection.Connection(idl, timeout)
    try:
        conn.start()
    except exceptions.TimeoutException:
        idl.close()
        raise DataPlaneUnreadable(f"no {schema} contents within {timeout:g} s", remote) from None
    try:
        with conn.lock:
            return take(idl.tables)
    finally:
        conn.stop(timeout)


def check(remote: str) -> None:
    """Refuse, in one line, a remote that is no OVSDB remote (before anything is read)."""
    if not remote.startswith(SCHEMES):
        raise DataPlaneUnreadable(f"not an OVSDB remote (expected {', '.join(s + '...' for s in SCHEMES)})", remote)


def optional(value: list) -> Any:
    """An optional column's value (the idl gives a list of none or one)."""
    return value[0] if value else None


def _ovsdbapp():
    try:
        with warnings.catch_warnings():  # ovs.poller imports eventlet where it is installed: its deprecation
            warnings.simplefilter("ignore")
            from ovs import stream
            from ovsdbapp import exceptions
            from ovsdbapp.backend.ovs_idl import connection, idlutils
    except ImportError:
        raise MissingDependency(
            "reading OVSDB needs ovsdbapp, which is not installed. Fix: pip install ovsdbapp "
            "(from a minbw checkout: pip install './python[dataplane]')."
        ) from None
    return stream, connection, idlutils, exceptions
