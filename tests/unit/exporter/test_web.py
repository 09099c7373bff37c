"""The exporter's endpoint configuration (:class:`minbw.exporter.http.Web`): TLS and basic authentication as
Prometheus' web configuration writes them, and the check of the credentials (bcrypt, a password that passed
remembered)."""
from __future__ import annotations

import base64

import pytest

from minbw.errors import InvalidInput
from minbw.exporter import http
from minbw.usecases.exporter import ExporterRequest

bcrypt = pytest.importorskip("bcrypt")
HASH = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_the_config_gives_tls_and_users():
    request = ExporterRequest.from_config({"tls_server_config": {"cert_file": "/c.pem", "key_file": "/k.pem"},
                                           "basic_auth_users": {"prometheus": HASH}})
    assert request.web == http.Web("/c.pem", "/k.pem", (("prometheus", HASH),)) and request.web.tls
    assert not ExporterRequest().web.tls and ExporterRequest().web.users == ()
    # the command line's files win over the config's
    cli = ExporterRequest.from_config({"tls_server_config": {"cert_file": "/c.pem", "key_file": "/k.pem"}},
                                      tls=("/other.pem", None))
    assert (cli.web.cert_file, cli.web.key_file) == ("/other.pem", "/k.pem")


@pytest.mark.parametrize("config, said", [
    ({"tls_server_config": {"cert_file": "/c.pem"}}, "give both cert_file and key_file"),
    ({"tls_server_config": {"cert_file": "/c", "key_file": "/k", "client_ca_file": "/ca"}}, "expected cert_file"),
    ({"basic_auth_users": {"prometheus": "s3cret"}}, "expected a bcrypt hash"),
    ({"basic_auth_users": ["prometheus"]}, "expected NAME: BCRYPT_HASH"),
    ({"ovn_sb_db": 6642}, "ovn_sb_db: expected a database"),
    ({"ovn_chassis": "one.json"}, "ovn_chassis: expected a list of file names"),
])
def test_a_bad_web_or_ovn_config_is_refused(config, said):
    with pytest.raises(InvalidInput, match=said):
        ExporterRequest.from_config(config)


@pytest.fixture
def checks(monkeypatch):
    """bcrypt's checks as they run (the real check, counted; each one may be held until ``release`` is set):
    ``checks.count``, ``checks.niceness`` (of the thread each ran in), ``checks.hold()``/``checks.release``."""
    import os
    import threading

    real = bcrypt.checkpw

    class Checks:
        count = 0
        niceness: list[int] = []
        started = threading.Semaphore(0)
        release = threading.Event()

        def hold(self):
            self.started = threading.Semaphore(0)
            self.release.clear()

        def __call__(self, password, hashed):
            type(self).count += 1
            self.niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            self.started.release()
            assert self.release.wait(30)
            return real(password, hashed)

    counted = Checks()
    counted.release.set()
    monkeypatch.setattr(http._bcrypt(), "checkpw", counted)
    return counted


def test_the_authenticator_checks_bcrypt_once_per_password(checks):
    auth = http.Authenticator((("prometheus", HASH),))
    assert auth(basic("prometheus", "s3cret")) is auth(basic("prometheus", "s3cret")) is http.Verdict.PASS
    assert checks.count == 1
    # a wrong password is remembered too: the hashes do not change while the exporter runs
    assert auth(basic("prometheus", "wrong")) is auth(basic("prometheus", "wrong")) is http.Verdict.FAIL
    assert checks.count == 2
    assert auth(basic("nobody", "s3cret")) is http.Verdict.FAIL and checks.count == 3  # an unknown user: a check too
    assert auth(basic("prometheus", "other")) is http.Verdict.FAIL and checks.count == 4
    for header in ("", "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()):
        assert auth(header) is http.Verdict.FAIL, header
    assert checks.count == 4
    assert http.Authenticator(())("") is http.Verdict.PASS  # no users: no authentication


def test_htpasswd_s_2y_hashes_pass():
    y = "$2y$" + HASH[4:]  # what htpasswd -nBC 10 writes
    assert http.Authenticator((("p", y),))(basic("p", "s3cret")) is http.Verdict.PASS


def test_the_checks_run_in_bounded_workers_at_lower_priority(checks):
    """One check at a time (slots=1): a second client's check waits for the first; the same client's second unknown
    credential is answered busy at once, without a check; a remembered password passes while the worker is busy; the
    worker runs at a higher niceness than the serving threads."""
    import os
    import threading
    from concurrent.futures import ThreadPoolExecutor

    auth = http.Authenticator((("prometheus", HASH),), slots=1, pending=16, wait=30)
    assert auth(basic("prometheus", "s3cret"), "10.0.0.9") is http.Verdict.PASS  # remembered from now on
    checks.hold()
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(auth, basic("prometheus", "wrong-1"), "10.0.0.1")
        assert checks.started.acquire(timeout=10)  # the one worker holds it
        second = pool.submit(auth, basic("prometheus", "wrong-2"), "10.0.0.2")  # waits for the worker
        assert auth(basic("prometheus", "wrong-3"), "10.0.0.1") is http.Verdict.BUSY  # 10.0.0.1 has one already
        assert auth(basic("prometheus", "s3cret"), "10.0.0.1") is http.Verdict.PASS  # remembered: no waiting
        assert not second.done() and checks.count == 2
        checks.release.set()
        assert first.result(10) is second.result(10) is http.Verdict.FAIL
    assert checks.count == 3
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert checks.niceness and all(n == min(19, mine + http.CHECK_NICENESS) for n in checks.niceness), checks.niceness


def test_the_unknown_credentials_waiting_are_bounded(checks):
    """At most ``pending`` checks waiting or running: beyond, busy at once; a request that waited ``wait`` s is
    answered busy, and its check never runs if it had not started (a started one ends and is remembered)."""
    from concurrent.futures import ThreadPoolExecutor

    auth = http.Authenticator((("prometheus", HASH),), slots=1, pending=2, wait=0.5)
    checks.hold()
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(auth, basic("prometheus", "wrong-1"), "10.0.0.1")
        assert checks.started.acquire(timeout=10)
        assert auth(basic("prometheus", "wrong-2"), "10.0.0.2") is http.Verdict.BUSY  # waited 0.5 s: cancelled
        late = pool.submit(auth, basic("prometheus", "wrong-3"), "10.0.0.3")
        while len(auth._clients) < 2:  # 10.0.0.3 waits
            pass
        assert auth(basic("prometheus", "wrong-4"), "10.0.0.4") is http.Verdict.BUSY  # two pending already
        assert late.result(10) is first.result(10) is http.Verdict.BUSY  # the first waited 0.5 s too
        checks.release.set()
    while auth._clients:  # the first check, which ran on after its client left, ends
        pass
    assert checks.count == 1  # neither cancelled check ran
    # the check that ran is remembered; the cancelled ones are made when asked again
    assert auth(basic("prometheus", "wrong-1"), "10.0.0.1") is http.Verdict.FAIL and checks.count == 1
    assert auth(basic("prometheus", "wrong-2"), "10.0.0.2") is http.Verdict.FAIL and checks.count == 2


def test_what_strangers_leave_in_memory_is_bounded(checks):
    auth = http.Authenticator((("prometheus", HASH),), failed=3)
    for i in range(10):
        assert auth(basic("prometheus", f"wrong-{i}")) is http.Verdict.FAIL
    assert len(auth._failed) == 3 and checks.count == 10
    assert auth(basic("prometheus", "wrong-9")) is http.Verdict.FAIL and checks.count == 10  # still remembered
    assert auth(basic("prometheus", "wrong-0")) is http.Verdict.FAIL and checks.count == 11  # forgotten: checked
    assert auth._clients == {}


def test_the_slots_leave_a_cpu_for_serving(monkeypatch):
    monkeypatch.setattr(http.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert http.check_slots() == 3
    monkeypatch.setattr(http.os, "sched_getaffinity", lambda pid: {0})
    assert http.check_slots() == 1


def test_the_app_answers_busy_with_503_and_retry_after():
    serve = http.app(http._Held(None), authenticate=lambda header, address: http.Verdict.BUSY)
    got = []
    body = serve({"PATH_INFO": "/metrics"}, lambda status, headers: got.append((status, dict(headers))))
    assert got[0][0] == "503 Service Unavailable" and got[0][1]["Retry-After"] == str(http.RETRY_AFTER)
    assert b"could not be checked" in body[0]


def test_the_app_answers_401_without_the_credentials():
    auth = http.Authenticator((("prometheus", HASH),))
    held = http._Held(None)
    serve = http.app(held, authenticate=auth)
    got = []
    body = serve({"PATH_INFO": "/metrics"}, lambda status, headers: got.append((status, dict(headers))))
    assert got[0][0] == "401 Unauthorized" and got[0][1]["WWW-Authenticate"].startswith('Basic realm="minbw exporter"')
    assert body == [b"Unauthorized\n"]
    serve({"PATH_INFO": "/metrics", "HTTP_AUTHORIZATION": basic("prometheus", "s3cret")},
          lambda status, headers: got.append((status, dict(headers))))
    assert got[1][0] == "200 OK"


def test_refusals_are_answered_late_a_bounded_number_at_once():
    """A refusal waits ``seconds`` (a thread asleep), at most ``most`` at once: the others are answered at once;
    an authorised scrape never waits."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    tarpit = http.Tarpit(seconds=1.0, most=2)
    verdicts = iter([http.Verdict.FAIL, http.Verdict.BUSY, http.Verdict.FAIL, http.Verdict.PASS])
    serve = http.app(http._Held(None), authenticate=lambda header, address: next(verdicts), tarpit=tarpit)

    def timed():
        got = []
        t = time.monotonic()
        serve({"PATH_INFO": "/favicon.ico"}, lambda status, headers: got.append(status))
        return got[0], time.monotonic() - t

    with ThreadPoolExecutor(2) as pool:
        late = [pool.submit(timed) for _ in range(2)]
        while tarpit._slots._value:  # both asleep
            time.sleep(0.01)
        status, took = timed()  # a third refusal: no room to wait, answered at once
        assert status == "401 Unauthorized" and took < 0.9, took
        assert timed()[0] == "200 OK"  # passed: never waits
        answers = sorted(f.result(10) for f in late)
    assert [s for s, _ in answers] == ["401 Unauthorized", "503 Service Unavailable"]
    assert all(took >= 1.0 for _, took in answers), answers


def test_bcrypt_releases_the_interpreter_lock_while_it_checks():
    """What docs/security.md relies on: while a bcrypt check runs in a thread (the bcrypt package's, cost 13 here:
    about half a CPU second), another Python thread runs too, so a check competes with the scrapes for a CPU only
    (where its lower priority makes it yield). Held for the whole check, the lock would let this thread wake about
    once."""
    import threading
    import time

    hashed = bcrypt.hashpw(b"x", bcrypt.gensalt(rounds=4)).replace(b"$04$", b"$13$")
    check = threading.Thread(target=bcrypt.checkpw, args=(b"y", hashed))
    woke = 0
    check.start()
    while check.is_alive():
        woke += 1
        time.sleep(0.001)
    check.join()
    assert woke >= 50, woke
