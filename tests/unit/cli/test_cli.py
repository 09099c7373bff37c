"""The command line's own parts, on cliff as OpenStack's clients are: the one base of every command (-f/-c/--json,
the document in JSON/YAML, head/sections/tail in tables), argument parsing (usage errors before anything runs),
the global --os-* options, cliff's bash completion (sourced in a real bash) and the progress display."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from minbw.cli import base, progress
from minbw.cli.base import (
    EXIT_ERROR, EXIT_FINDINGS, EXIT_NO_VALID_HOST, EXIT_USAGE, EXIT_WRITTEN_UNVERIFIED, Section, View, exit_code_of)
from minbw.cli.shell import MinbwShell

CLI = Path(__file__).resolve().parents[3] / "python" / "minbw" / "cli"
LISTER = View([{"a": 1, "b": "x"}, {"a": 2, "b": "y z"}], ("a", "b"), ((1, "x"), (2, "y z")),
              head=("above",), tail=("below",), sections=(Section("more", ("k",), (("v",),)),))
SHOW = base.fields({"changed": True, "pid": 7}, ("changed", "pid"), "started (pid 7)")


def render(shown: View, *args: str) -> str:
    """``shown`` by a command run with ``args`` (the formatter options)."""
    class Shown(base.Command):
        columns = shown.columns

        def view(self, parsed_args):
            return shown
    out = io.StringIO()
    app = SimpleNamespace(stdout=out, options=SimpleNamespace(debug=False))
    cmd = Shown(app, None)
    assert cmd.run(cmd.get_parser("shown").parse_args(list(args))) == shown.exit_code
    return out.getvalue().rstrip("\n")


def test_table_has_head_table_sections_and_tail():
    assert render(LISTER, "-f", "table").splitlines() == [
        "above", "+---+-----+", "| a | b   |", "+---+-----+", "| 1 | x   |", "| 2 | y z |", "+---+-----+",
        "", "more", "+---+", "| k |", "+---+", "| v |", "+---+", "below"]


def test_columns_pick_and_order_and_drop_the_rest():
    assert render(LISTER, "-c", "b").splitlines() == ["above", "+-----+", "| b   |", "+-----+", "| x   |",
                                                      "| y z |", "+-----+"]
    assert render(LISTER, "-f", "value", "-c", "b", "-c", "a") == "1 x\n2 y z"  # cliff keeps the table's order
    assert json.loads(render(LISTER, "-f", "json", "-c", "b")) == [{"b": "x"}, {"b": "y z"}]
    assert yaml.safe_load(render(LISTER, "-f", "yaml", "-c", "a")) == [{"a": 1}, {"a": 2}]
    assert render(LISTER, "-f", "csv").splitlines() == ['"a","b"', '1,"x"', '2,"y z"']
    assert render(LISTER, "-f", "value", "--sort-column", "a", "--sort-descending") == "2 y z\n1 x"


def test_json_and_yaml_print_the_document_unchanged():
    assert json.loads(render(LISTER, "-f", "json")) == LISTER.document
    assert json.loads(render(LISTER, "--json")) == LISTER.document  # --json is -f json
    assert yaml.safe_load(render(LISTER, "-f", "yaml")) == LISTER.document
    assert render(LISTER, "-f", "value") == "1 x\n2 y z"  # the table's rows, no headers, no notes


def test_one_object_is_a_sentence_or_its_fields():
    assert render(SHOW, "-f", "table") == "started (pid 7)"
    assert render(SHOW, "-c", "pid").splitlines()[-2] == "| pid   | 7     |"
    assert render(SHOW, "-f", "value", "-c", "pid") == "7"
    assert json.loads(render(SHOW, "-f", "json", "-c", "pid")) == {"pid": 7}


def test_dict_and_list_cells_read_well_in_tables_and_stay_data_in_json():
    view = View([], ("resources", "traits"), (({"VCPU": 1, "MEMORY_MB": 256}, ["A", "B"]),))
    assert "| VCPU=1, MEMORY_MB=256 | A, B   |" in render(view, "-f", "table")
    assert json.loads(render(view, "-f", "json", "-c", "resources")) == [{"resources": {"VCPU": 1, "MEMORY_MB": 256}}]


def test_the_exit_code_is_the_views():
    assert render(View({"ok": False}, ("x",), (), exit_code=EXIT_FINDINGS), "-f", "json") == '{\n  "ok": false\n}'


def commands(group: str) -> dict[str, object]:
    return {ep.name.replace("_", " "): ep for ep in metadata.entry_points(group=group)}


def test_minbw_x_is_openstack_bandwidth_x():
    """One vocabulary: the shell's commands are openstack bandwidth's, the prefix dropped, and no other."""
    osc = commands("openstack.bandwidth.v1")
    assert len(osc) > 20 and all(name.startswith("bandwidth ") for name in osc)
    shell = MinbwShell(stdout=io.StringIO(), stderr=io.StringIO())
    mine = {name: ep.value for name, ep in shell.command_manager if name not in ("help", "complete")}  # cliff's
    assert mine == {name.removeprefix("bandwidth "): ep.value for name, ep in osc.items()}
    assert not metadata.entry_points(group="minbw.cli")  # the old names' group is gone
    verbs = {"create", "delete", "list", "show", "set", "unset", "sync", "migrate", "confirm", "revert", "heal",
             "schedule", "serve", "stop", "drain"}
    for name, ep in osc.items():
        # osc's object-verb names; audit, doctor and exporter are commands of one word, as osc's own `complete`
        assert name in ("bandwidth audit", "bandwidth doctor", "bandwidth exporter") or name.split()[-1] in verbs, \
            name
        cls = ep.load()
        assert issubclass(cls, base.Command), name
        cmd = cls(SimpleNamespace(stdout=io.StringIO()), None)
        opts = {o for a in cmd.get_parser(name)._actions for o in a.option_strings}
        assert {"-f", "--format", "-c", "--column", "--json", "--sort-column", "--fit-width"} <= opts, name


def test_the_epilog_is_cliffs_without_reading_every_distribution(monkeypatch):
    """Command.get_epilog answers as cliff's own does (the oracle: cliff's get_epilog, given the module→distribution
    map a wheel install has), for the minbw shell (no plugin line) and another application's (the plugin line),
    without cliff's read of every installed distribution's metadata."""
    from cliff import command as cliff_command
    monkeypatch.setattr(cliff_command, "_dists_by_mods", {"minbw": "minbw", "cliff": "cliff"})
    foreign = type("OpenStackShell", (), {"__module__": "cliff.app"})  # an app of another distribution
    for ep_name, ep in {**commands("minbw.cli"), **commands("openstack.bandwidth.v1")}.items():
        cls = ep.load()
        for app, line in ((MinbwShell(), False), (foreign(), True)):
            cmd = cls(app, None)
            ours = cmd.get_epilog()
            assert ours == cliff_command.Command.get_epilog(cmd), ep_name
            assert ("This command is provided by the minbw plugin." in ours) is line, ep_name
    monkeypatch.setattr(cliff_command, "_dists_by_mods", None)
    monkeypatch.setattr(cliff_command, "packages_distributions", lambda: pytest.fail("read every distribution"))
    cls(MinbwShell(), None).get_parser("minbw x")


def run_shell(*argv: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "minbw.cli", *argv], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    return proc.returncode, proc.stdout, proc.stderr


def test_usage_errors_exit_2_naming_the_option_before_anything_is_read():
    rc, _, err = run_shell("--os-cloud", "nowhere", "usage", "show", "-c", "nosuch")
    assert rc == EXIT_USAGE and "no column 'nosuch'" in err
    rc, _, err = run_shell("--os-cloud", "nowhere", "candidate", "list", "--resource", "VCPU:1")
    assert rc == EXIT_USAGE and "--resource: expected CLASS=AMOUNT, e.g. VCPU=1" in err
    rc, _, err = run_shell("--os-cloud", "nowhere", "capacity", "show", "--qos-port", "min_bw:egress:lots")
    assert rc == EXIT_USAGE and "--qos-port: " in err and "min_kbps must be a whole number" in err
    rc, _, err = run_shell("--os-placement-api-version", "one.two", "usage", "show")
    assert rc == EXIT_USAGE and "expected a microversion MAJOR.MINOR" in err


def test_global_options_come_before_the_command_and_an_unknown_cloud_is_one_line():
    rc, out, err = run_shell("--os-cloud", "nowhere", "provider", "list")
    assert rc == EXIT_ERROR and out == ""
    assert err.startswith("minbw: error: ") and "nowhere" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_exit_codes_are_distinct():
    assert len({0, EXIT_ERROR, EXIT_USAGE, EXIT_FINDINGS, EXIT_NO_VALID_HOST, EXIT_WRITTEN_UNVERIFIED}) == 6
    assert 130 not in {EXIT_ERROR, EXIT_USAGE, EXIT_FINDINGS, EXIT_NO_VALID_HOST, EXIT_WRITTEN_UNVERIFIED}


def test_a_claim_written_and_not_verified_has_its_own_exit_code_other_partial_writes_exit_1():
    """Only a WrittenUnverified (the claim is written, its verification's read failed) exits 5; another PartialApply
    (a sync stopped part-way) exits 1, as does the read's error alone (nothing written)."""
    from minbw.errors import PartialApply, PlacementUnavailable, WrittenUnverified
    from minbw.plan.allocations import ClaimOp

    cause = PlacementUnavailable("answered 503", status=503, method="GET", url="/usages")
    op = ClaimOp("put_allocations", consumer="c1", host="h1", allocations={"rp": {"resources": {"VCPU": 1}}})
    written = WrittenUnverified(cause, op, consumer="c1", host="h1")
    assert exit_code_of(written) == EXIT_WRITTEN_UNVERIFIED == 5
    assert exit_code_of(PartialApply(cause, [op], 2)) == exit_code_of(cause) == EXIT_ERROR
    assert str(written).startswith("the claim of consumer c1 is written in Placement (its allocations on host h1)")
    assert str(PartialApply(cause, [op], 2, pending=[op])).startswith("1 of 2 planned writes succeeded (the last: ")


def test_no_command_draws_a_table_itself():
    """cliff's formatters draw every table and print every document: no command does it itself."""
    for f in CLI.glob("*.py"):
        text = f.read_text()
        assert not re.search(r"prettytable|json\.dumps\(.*indent|yaml\.safe_dump|print_json|\"\+-", text), f.name


# bash-completion's helper, which cliff's script calls (a Debian machine without the bash-completion package)
COMP_WORDS_BY_REF = ('_get_comp_words_by_ref() { cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"; '
                     'words=("${COMP_WORDS[@]}"); }')


@pytest.mark.skipif(not shutil.which("bash"), reason="bash")
def test_completion_script_in_a_real_bash(tmp_path):
    rc, script, err = run_shell("complete", "--name", "minbw")
    assert rc == 0, err
    assert script.rstrip().endswith("complete -F _minbw minbw")
    (tmp_path / "minbw.bash").write_text(script)

    def complete(*words: str) -> list[str]:
        line = " ".join(("minbw",) + words)
        cmd = (f"{COMP_WORDS_BY_REF}; source {tmp_path / 'minbw.bash'}; COMP_WORDS=(minbw {' '.join(words)} ''); "
               f"COMP_CWORD={len(words) + (0 if words and words[-1] else 1)}; COMP_LINE='{line}'; _minbw; "
               f"printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert {"provider", "placement", "allocation", "capacity"} <= set(complete())
    assert complete("prov") == ["provider"]
    assert set(complete("provider", "")) == {"list", "sync"}
    assert "--resource" in complete("allocation", "create", "--re")
    assert complete("placement", "") == ["serve", "show", "stop"]
    assert complete("allocation", "migrate", "confirm", "--mig") == ["--migration"]


def test_progress_bar_on_a_terminal_plain_lines_otherwise():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    plain = io.StringIO()
    p = progress.Progress(plain, tty=False, every=2)
    for i in range(1, 6):
        p("providers read", i, 5)
    assert plain.getvalue() == "minbw: providers read 2/5\nminbw: providers read 4/5\n"

    tty = Tty()
    with progress.progress_of(stream=tty) as p:
        p.interval = 0
        for i in range(1, 5):
            p("writes done", i, 4)
    out = tty.getvalue()
    assert out.count("\r") == 4 and out.endswith("[" + "#" * progress.WIDTH + "] 4/4\n")
    assert progress.bar("x", 1, 2) == f"minbw: x [{'#' * 15}{'.' * 15}] 1/2"

    broken = Tty()
    with pytest.raises(RuntimeError):
        with progress.progress_of(stream=broken) as p:
            p.interval = 0
            p("writes done", 1, 4)
            raise RuntimeError("a write failed")
    assert broken.getvalue().endswith("1/4\n")  # the error message starts on a line of its own


def test_interactive_mode_is_imported_only_when_used():
    """cliff's interactive mode (cmd2) is loaded on first use: a command's start does not import it, and `minbw`
    without a command still reads commands from its input."""
    probe = ("import sys; from minbw.cli import shell; shell.main(['placement', 'show', '--state-dir', '/nonexistent',"
             " '--port', '1', '-f', 'value', '-c', 'running']); print('cmd2' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["False", "False"], proc.stderr
    proc = subprocess.run([sys.executable, "-m", "minbw.cli"], capture_output=True, text=True, timeout=120,
                          input="placement show --state-dir /nonexistent --port 1 -f value -c running\nquit\n")
    assert proc.stdout.split() == ["False"], proc.stdout + proc.stderr  # (cliff's interactive mode exits 1)


# What `minbw --help` must not load: the commands' work (their use cases, beyond the grammar of their options), the
# solver, the data-plane libraries, the exporter's, cliff's interactive mode; and of what osc-lib's shell imports at its
# top, openstacksdk's services (openstack/__init__ and openstack.connection: every service's proxy and resources).
NOT_FOR_HELP = ("minbw.ops", "minbw.readers", "minbw.reports", "minbw.plan", "minbw.placement", "minbw.cache",
                "minbw.exporter", "minbw.dataplane", "minbw.deploy", "minbw.usecases.providers", "minbw.usecases.cloud",
                "numpy", "highspy", "ovsdbapp", "pyroute2", "bcrypt", "matplotlib", "cmd2",
                "openstack._services_mixin", "openstack.cloud", "openstack.compute", "openstack.network",
                "openstack.placement", "webob", "oslo_config")
# Bound by the imports of osc-lib's shell, run on first use (importlib's LazyLoader: executed, the module's type is
# ModuleType again): what --help must not run.
LAZY_FOR_HELP = ("openstack.connection", "oslo_utils.strutils", "osprofiler.profiler", "osprofiler.web",
                 "prometheus_client", "cliff.interactive", "netaddr", "statsd", "wcwidth",
                 "jmespath", "jsonpatch")


def test_help_imports_no_command_s_work_reads_no_cloud_and_searches_no_distribution(tmp_path):
    """`minbw --help` lists every command from its class alone: it imports none of what the commands do (NOT_FOR_HELP),
    runs neither openstacksdk's package __init__ nor what osc-lib imports for a command's run (LAZY_FOR_HELP), does not
    read clouds.yaml (a broken one says nothing), and does not search every installed distribution's files
    (importlib.metadata.packages_distributions: cliff's, to name a command's distribution, and every one is minbw's)."""
    broken = tmp_path / "clouds.yaml"
    broken.write_text("clouds: [broken\n")
    probe = ("import sys, types, importlib.metadata\n"
             "searched = []\n"
             "search = importlib.metadata.packages_distributions\n"
             "importlib.metadata.packages_distributions = lambda: searched.append(1) or search()\n"
             "from minbw.cli import shell\n"
             "try:\n"
             "    code = shell.main(['--help'])\n"
             "except SystemExit as e:  # cliff's HelpExit\n"
             "    code = e.code\n"
             "loaded = sorted(m for m in sys.modules if m.startswith(%r))\n"
             "ran = [m for m in %r if type(sys.modules.get(m)) is types.ModuleType]\n"
             "init = 'connect' in vars(sys.modules['openstack'])\n"
             "print('RESULT', code or 0, len(searched), loaded, ran, init, file=sys.stderr)\n"
             % (NOT_FOR_HELP, LAZY_FOR_HELP))
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(broken), "OS_CLOUD": "minbw-local"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert "usage show" in proc.stdout and "provider sync" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == ["RESULT 0 0 [] [] False"], proc.stderr


def test_a_command_runs_with_what_its_threads_may_use_loaded():
    """What the shell's import left lazy and a command's threads may use first (shell.LOADED_BEFORE_A_COMMAND:
    osprofiler's web module, a request's trace headers) runs before the command runs, in the main thread (LazyLoader
    is not thread-safe before Python 3.12.3), when the command is profiled (--os-profile); without it the module tells
    keystoneauth there is no trace to send without running its code. Of the others, neither osc-lib's strutils (its
    initialize_app's log lines mask when they are logged: test_the_logged_lines_are_masked_as_strutils_masks_them) nor
    openstack.connection runs (a command loads it when it makes a Connection, which Cloud.conn makes under a lock)."""
    # (--os-profile: osprofiler's web module, run before the command, imports netaddr's names through oslo.utils)
    for extra, ran in ((["--os-profile", "key"], ["osprofiler.profiler", "osprofiler.web", "netaddr"]), ([], [])):
        probe = ("import sys, types; from minbw.cli import shell\n"
                 "assert [type(sys.modules[m]) for m in shell.LOADED_BEFORE_A_COMMAND] != [types.ModuleType]\n"
                 "shell.main(%r + ['placement', 'show', '--state-dir', '/nonexistent', '--port', '1', '-f', 'value',"
                 " '-c', 'running'])\n"
                 "print([m for m in %r if type(sys.modules.get(m)) is types.ModuleType])" % (extra, LAZY_FOR_HELP))
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[-1] == str(ran), (extra, proc.stdout)


def test_a_placement_command_makes_no_openstacksdk_connection(tmp_path):
    """A command that needs Placement alone (``usage show``) connects to it from the cloud region
    (minbw.placement.connection): it neither runs openstack.connection nor imports openstacksdk's services, nor runs
    osprofiler's web module (no --os-profile). Here its Placement is a closed port (one try), so it fails as such,
    in one line (tests/functional/test_cli_formats.py runs it against a Placement)."""
    clouds = tmp_path / "clouds.yaml"
    url = "http://127.0.0.1:9"  # discard: nothing listens
    clouds.write_text(yaml.safe_dump({"clouds": {"closed": {
        "auth_type": "admin_token", "auth": {"endpoint": url, "token": "admin"}, "placement_endpoint_override": url}}}))
    probe = ("import sys, types; from minbw.cli import shell\n"
             "code = shell.main(['usage', 'show'])\n"
             "ran = [m for m in %r if type(sys.modules.get(m)) is types.ModuleType]\n"
             "print('RESULT', code, ran, 'openstack._services_mixin' in sys.modules, file=sys.stderr)\n"
             % (LAZY_FOR_HELP,))
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": "closed", "MINBW_PLACEMENT_ATTEMPTS": "1"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    lines = proc.stderr.splitlines()
    assert lines[-1] == "RESULT 1 [] False", proc.stderr
    assert lines[0].startswith("minbw: error: cannot reach cloud 'closed'") and len(lines) == 2, proc.stderr


def test_the_logged_lines_are_masked_as_strutils_masks_them(tmp_path):
    """osc-lib's shell and cloud config log the options and the cloud's configuration through oslo.utils'
    ``strutils.mask_password``, which the shell loads without running its code (python/minbw/cli/shell.py:
    _MaskedWhenFormatted): a line that is logged (``--debug``) is masked when it is formatted, as with strutils run
    first (the same lines: the password masked), and a command whose lines are not logged never runs strutils."""
    clouds = tmp_path / "clouds.yaml"
    url = "http://127.0.0.1:9"  # discard: nothing listens
    clouds.write_text(yaml.safe_dump({"clouds": {"closed": {
        "auth_type": "password", "auth": {"auth_url": url, "username": "u", "password": "cloud-secret",
                                          "project_name": "p"}, "placement_endpoint_override": url}}}))
    env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": "closed", "MINBW_PLACEMENT_ATTEMPTS": "1",
           "PYTHONHASHSEED": "0"}
    logged = {}
    for first in ("", "import oslo_utils.strutils\n"):
        probe = (first + "import sys, types; from minbw.cli import shell\n"
                 "shell.main(sys.argv[1:])\n"
                 "print('RAN', type(sys.modules['oslo_utils.strutils']) is types.ModuleType, file=sys.stderr)\n")
        for argv in (["--debug", "--os-password", "option-secret", "usage", "show"], ["usage", "show"]):
            proc = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120,
                                  env=env)
            logged[first, argv[0]] = [line for line in proc.stderr.splitlines()
                                      if line.startswith(("options:", "cloud cfg:", "auth_config_hook():", "RAN"))]
    masked, real = logged["", "--debug"], logged["import oslo_utils.strutils\n", "--debug"]
    assert masked == real and len(masked) >= 4 and masked[-1] == "RAN True", masked
    assert "password='***'" in masked[0] and not any("-secret" in line for line in masked), masked
    assert logged["", "usage"] == ["RAN False"], logged["", "usage"]


# cells of every width wcwidth tells apart: wide (CJK), emoji with a joiner, combining marks, zero width, an escape
# sequence, a tab, a line break, and a cell wider than the terminal (wrapped: wcwidth's Python code)
TABLE_PROBE = r"""
import io, json, sys, types
{first}
from minbw.cli import shell
from cliff.formatters.table import TableFormatter
cells = ["host00", "計算ノード", "👩‍💻 dev", "e\u0301te\u0301", "a\u200bb", "\x1b[31mred\x1b[0m", "t\tab", "two\nlines"]
rows = [(c, len(c), c.upper()) for c in cells]
out = {{}}
for width in (0, 30):
    f = TableFormatter()
    args = types.SimpleNamespace(max_width=width, fit_width=bool(width), print_empty=False, sort_columns=[],
                                 sort_direction="asc")
    buf = io.StringIO()
    f.emit_list(("cell", "length", "upper"), list(rows), buf, args)
    out[width] = buf.getvalue()
print(json.dumps({{"out": out, "ran": type(sys.modules["wcwidth"]) is types.ModuleType}}))
"""


def test_a_table_is_the_same_text_without_wcwidth_s_init():
    """The shell binds wcwidth without running its __init__ (python/minbw/cli/shell.py: _WidthsFromTheExtension):
    cliff's table (prettytable) gets each cell's width and justification from wcwidth's C extension as wcwidth's own
    __init__ binds them, and prints the same text as with wcwidth loaded first, for cells of every width wcwidth tells
    apart; a table whose cells fit does not run wcwidth's code, one wrapped to the terminal (wcwidth's wrap) runs it.
    With WCWIDTH_PYTHON set (wcwidth's Python functions) the same text again."""
    printed = {}
    for env_extra in ({}, {"WCWIDTH_PYTHON": "1"}):
        for first in ("", "import wcwidth"):
            probe = TABLE_PROBE.format(first=first)
            proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                                  env={**os.environ, **env_extra})
            assert proc.returncode == 0, proc.stderr
            printed[tuple(env_extra), first] = json.loads(proc.stdout)
    real = printed[(), "import wcwidth"]["out"]
    assert "計算ノード" in real["0"] and real["0"] != real["30"], real
    assert {json.dumps(p["out"]) for p in printed.values()} == {json.dumps(real)}
    assert printed[(), ""]["ran"] is True  # the wrapped table ran wcwidth's code
    fit = TABLE_PROBE.format(first="").replace("(0, 30)", "(0,)")
    proc = subprocess.run([sys.executable, "-c", fit], capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout) == {"out": {"0": real["0"]}, "ran": False}, proc.stdout + proc.stderr


def test_the_command_line_ends_after_its_exit_handlers_and_its_output_without_finalization():
    """``main()`` on the process's command line: once the command is done and Python's exit has waited for its
    threads and run its exit handlers (once), the process ends with the command's exit code and its whole output,
    without Python's finalization (shell._end_without_finalization: an object's ``__del__`` at a module's teardown
    does not run), also after ``--help`` (cliff's help exit); ``main(argv)`` (in a process that goes on) changes
    nothing of Python's exit."""
    probe = ("import atexit, sys, threading\n"
             "mode = sys.argv[1]\n"
             "from minbw.cli import shell\n"
             "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
             "class Finalized:\n"
             "    def __del__(self):\n"
             "        print('finalized', file=sys.stderr)\n"
             "kept = Finalized()\n"
             "done = threading.Event()\n"
             "threading.Thread(target=lambda: done.wait(60) and print('thread done', flush=True)).start()\n"
             "argv = ['placement', 'show', '--state-dir', '/nonexistent', '--port', '1', '-f', 'value', '-c', 'running']\n"
             "sys.argv = ['minbw', *argv]\n"
             "if mode == 'help':  # cliff's help exit: the same end\n"
             "    done.set()\n"
             "    sys.argv = ['minbw', '--help']\n"
             "code = shell.main() if mode in ('cli', 'help') else shell.main(argv)\n"
             "print('main returned', code, flush=True)\n"
             "done.set()\n"
             "sys.exit(3 if code == 0 else 1)\n")
    ended, argv = (subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True, timeout=120)
                   for mode in ("cli", "argv"))
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, "False\nmain returned 0\nthread done\n",
                                                              "handler ran\n"), ended
    assert (argv.returncode, argv.stdout, argv.stderr) == (3, "False\nmain returned 0\nthread done\n",
                                                           "handler ran\nfinalized\n"), argv
    helped = subprocess.run([sys.executable, "-c", probe, "help"], capture_output=True, text=True, timeout=120)
    assert (helped.returncode, helped.stderr) == (0, "handler ran\n"), helped
    assert "usage: minbw" in helped.stdout and "thread done\n" in helped.stdout, helped.stdout


def test_without_a_profiler_a_request_carries_no_trace_headers_and_with_one_osprofiler_s():
    """osprofiler's web module, as the shell loads it (python/minbw/cli/shell.py: _ProfilerWebFirst), answers
    keystoneauth's request for trace headers as osprofiler does: none while no profiler was started, without running
    its code; osprofiler's own headers once one was (its profiler module ran: osc-lib's --os-profile)."""
    probe = ("import sys, types; from minbw.cli import shell\n"
             "web = sys.modules['osprofiler.web']\n"
             "before = (web.get_trace_id_headers(), type(web) is types.ModuleType)\n"
             "from osprofiler import profiler\n"
             "profiler.init('key', base_id='4f5ffe8e-2f96-4de3-b3a6-1d4d4e6cc0cf', parent_id='p')\n"
             "headers = web.get_trace_id_headers()\n"
             "print(before, sorted(headers), type(web) is types.ModuleType, web.X_TRACE_INFO)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "({}, False) ['X-Trace-HMAC', 'X-Trace-Info'] True X-Trace-Info", proc.stdout


# Every help the shell prints, in one process: the shell's own (--help, -h, help) and each command's.
HELP_PROBE = """
import io, json, sys, types
{first}
from minbw.cli import shell
from minbw.cli.shell import MinbwShell

names = sorted(name for name, _ep in MinbwShell(stdout=io.StringIO(), stderr=io.StringIO()).command_manager)
printed = {{}}
for argv in [["--help"], ["-h"], ["help"], *([*name.split(), "--help"] for name in names)]:
    out, err = io.StringIO(), io.StringIO()
    try:
        code = MinbwShell(stdout=out, stderr=err).run(argv)
    except SystemExit as e:  # argparse's help of a command
        code = e.code
    printed[" ".join(argv)] = [code or 0, out.getvalue() + sys.stdout.getvalue(), err.getvalue()]
    sys.stdout.seek(0)
    sys.stdout.truncate()
lazy = [m for m in {lazy!r} if type(sys.modules.get(m)) is types.ModuleType]
sys.stdout = sys.__stdout__
print(json.dumps({{"printed": printed, "ran": lazy, "sdk": "openstack._services_mixin" in sys.modules}}))
"""


def _helps(first: str) -> dict:
    """What HELP_PROBE prints, after ``first`` (Python) ran; a fixed hash seed: osc-lib lists keystoneauth's plugins
    (and their options) in the order of a set of their names."""
    probe = "import io, sys\nsys.argv = ['minbw']\nsys.stdout = io.StringIO()\n" + HELP_PROBE.format(first=first, lazy=LAZY_FOR_HELP)
    env = {**os.environ, "PYTHONHASHSEED": "0", "OS_CLIENT_CONFIG_FILE": "/nonexistent", "COLUMNS": "120"}
    env.pop("OS_CLOUD", None)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_every_help_is_the_same_text_without_openstacksdk_s_services():
    """The shell's start imports openstacksdk's package without its __init__ and osc-lib's run-time modules lazily
    (python/minbw/cli/shell.py); every help (the shell's --help, -h and help, each command's --help) prints what it
    prints when openstacksdk's package is imported first, as osc-lib's shell alone imports it, and none of them loads
    openstacksdk's services (`help` and a command's --help run osc-lib's initialize_app, and with it strutils)."""
    fast = _helps("")
    slow = _helps("import openstack")
    assert slow["sdk"] and not fast["sdk"] and set(fast["ran"]) <= {"oslo_utils.strutils"}, (fast["sdk"], fast["ran"])
    assert len(fast["printed"]) > 25 and fast["printed"].keys() == slow["printed"].keys()
    assert fast["printed"]["help"] == fast["printed"]["-h"] == fast["printed"]["--help"]
    for argv, (code, out, err) in fast["printed"].items():
        assert code == 0 and "usage: minbw" in out and err == "", (argv, code, err)
        assert [code, out, err] == slow["printed"][argv], argv


def test_help_lists_the_commands_as_cliff_s_help_does():
    """The shell's ``--help`` (without cliff's distribution search) prints what cliff's own help action prints."""
    import argparse

    from cliff import help as cliff_help

    from minbw.cli.shell import MinbwHelpAction

    outputs = []
    for action in (cliff_help.HelpAction, MinbwHelpAction):
        app = MinbwShell(stdout=io.StringIO(), stderr=io.StringIO())
        app.options, _rest = app.parser.parse_known_args([])
        with pytest.raises(cliff_help.HelpExit):
            action([], argparse.SUPPRESS, default=app)(app.parser, app.options, None, None)
        outputs.append(app.stdout.getvalue())
    assert "\nCommands:\n" in outputs[0] and "  usage show     Usage and allocations" in outputs[0], outputs[0]
    assert outputs[1] == outputs[0]


def test_the_exporter_says_a_bad_config_as_every_command_does_in_every_format(tmp_path):
    """``exporter`` runs through cliff's run as the other commands (no table): its failure is one line, and with
    ``-f json`` the error document too."""
    import json
    missing = str(tmp_path / "missing.yaml")
    rc, out, err = run_shell("exporter", "--once", "--config", missing, "-f", "json")
    assert rc == EXIT_ERROR and err.startswith(f"minbw: error: --config {missing}: "), err
    assert json.loads(out) == {"error": {"msg": err.strip().removeprefix("minbw: error: ")}}
    rc, out, err = run_shell("exporter", "--once", "--config", missing)
    assert rc == EXIT_ERROR and out == "" and err.count("\n") == 1, err
