"""The ``minbw`` command's pure parts: the one output layer (-f/-c/--json), argument parsing, the
bash completion script (sourced in a real bash) and the progress display."""
from __future__ import annotations

import argparse
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from minbw.cli import output, progress
from minbw.cli.completion import bash_script
from minbw.cli.main import EXIT_ERROR, EXIT_FINDINGS, EXIT_NO_VALID_HOST, EXIT_USAGE, build_parser
from minbw.cli.output import Output, Section, render

CLI = Path(__file__).resolve().parents[2] / "python" / "minbw" / "cli"
LISTER = Output([{"a": 1, "b": "x"}, {"a": 2, "b": "y z"}], ("a", "b"), ((1, "x"), (2, "y z")),
                head=("above",), tail=("below",), sections=(Section("more", ("k",), (("v",),)),))
SHOW = Output({"changed": True, "pid": 7}, ("changed", "pid"), ((True, 7),), fields=True, head=("started (pid 7)",),
              show_table=False)


def test_table_has_head_table_sections_and_tail():
    assert render(LISTER, "table").splitlines() == [
        "above", "+---+-----+", "| a | b   |", "+---+-----+", "| 1 | x   |", "| 2 | y z |", "+---+-----+",
        "", "more", "+---+", "| k |", "+---+", "| v |", "+---+", "below"]


def test_columns_pick_and_order_and_drop_the_rest():
    assert render(LISTER, "table", ["b"]).splitlines() == ["above", "+-----+", "| b   |", "+-----+", "| x   |",
                                                          "| y z |", "+-----+"]
    assert render(LISTER, "value", ["b", "a"]) == "x 1\ny z 2"
    assert json.loads(render(LISTER, "json", ["b"])) == [{"b": "x"}, {"b": "y z"}]
    assert yaml.safe_load(render(LISTER, "yaml", ["a"])) == [{"a": 1}, {"a": 2}]


def test_json_and_yaml_print_the_document_unchanged():
    assert json.loads(render(LISTER, "json")) == LISTER.document
    assert yaml.safe_load(render(LISTER, "yaml")) == LISTER.document
    assert render(LISTER, "value") == "1 x\n2 y z"  # the table's rows, no headers, no notes


def test_one_object_is_a_sentence_or_its_fields():
    assert render(SHOW, "table") == "started (pid 7)"
    assert render(SHOW, "table", ["pid"]).splitlines()[-2] == "| pid   | 7     |"
    assert render(SHOW, "value", ["pid"]) == "7"
    assert json.loads(render(SHOW, "json", ["pid"])) == {"pid": 7}


def _leaves(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if parser.get_default("func") is not None:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, path + (name,))


def test_every_command_but_completion_has_the_formatters():
    leaves = dict(_leaves(build_parser([])))
    assert len(leaves) > 15
    for path, parser in leaves.items():
        opts = {o for a in parser._actions for o in a.option_strings}
        if path == ("completion",):
            continue
        assert {"-f", "--format", "-c", "--column", "--json"} <= opts, path


def test_json_is_an_alias_and_columns_are_checked_while_parsing(capsys):
    p = build_parser(["usage"])
    assert p.parse_args(["usage", "--json"]).format == "json"
    assert p.parse_args(["usage", "-f", "yaml", "-c", "used", "-c", "name"]).columns == ["used", "name"]
    assert output.output_format(p.parse_args(["usage"])) == "table"
    assert output.output_format(p.parse_args(["request", "--port-id", "99a97b12-6364-4d10-8d8e-c3dab4161691"])) == "json"  # its file is JSON
    with pytest.raises(SystemExit) as e:
        p.parse_args(["usage", "-c", "nosuch"])
    assert e.value.code == EXIT_USAGE and "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_cloud_commands_take_openstacksdk_options():
    p = build_parser(["usage"])
    args = p.parse_args(["usage", "--os-cloud", "c", "--os-region-name", "r", "--os-interface", "internal",
                         "--os-cacert", "/ca.pem", "--os-auth-url", "https://k/v3", "--os-username", "u"])
    assert (args.os_cloud, args.os_region_name, args.os_interface, args.os_cacert, args.os_auth_url,
            args.os_username) == ("c", "r", "internal", "/ca.pem", "https://k/v3", "u")
    assert args.insecure is False  # TLS verification stays on unless asked
    token = build_parser(["usage", "--os-auth-type", "token"]).parse_args(
        ["usage", "--os-auth-type", "token", "--os-token", "t"])
    assert token.os_token == "t"  # the auth plugin's own options, as the openstack client offers them


def test_exit_codes_are_distinct():
    assert len({0, EXIT_ERROR, EXIT_USAGE, EXIT_FINDINGS, EXIT_NO_VALID_HOST}) == 5


def test_no_command_draws_a_table_itself():
    """One formatter, one place: only cli/output.py draws tables or prints JSON."""
    for f in CLI.glob("*.py"):
        if f.name in ("output.py", "tables.py"):
            continue
        text = f.read_text()
        assert not re.search(r"tables\.table\(|json\.dumps\(.*indent|print_json", text), f.name


@pytest.mark.skipif(not shutil.which("bash"), reason="bash")
def test_completion_script_in_a_real_bash(tmp_path):
    script = tmp_path / "minbw.bash"
    script.write_text(bash_script(build_parser([])))

    def complete(*words: str) -> list[str]:
        line = " ".join(("minbw",) + words)
        cmd = (f"source {script}; complete -p minbw; COMP_WORDS=(minbw {' '.join(words)}); "
               f"COMP_CWORD={len(words)}; COMP_LINE='{line}'; _minbw; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        first, *rest = proc.stdout.splitlines()
        assert first == "complete -o default -F _minbw minbw"
        return rest

    assert {"providers", "placement", "claim", "completion"} <= set(complete(""))
    assert complete("prov") == ["providers"]
    assert complete("providers", "") == ["plan", "show", "sync", "-h", "--help"]
    assert complete("usage", "-f", "") == ["table", "json", "yaml", "value"]
    assert "resource_class" in complete("usage", "-c", "")
    assert "--os-cloud" in complete("providers", "show", "--os-")
    assert complete("move", "con") == ["confirm"]


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
