"""``minbw completion bash``: a bash completion script built from the argparse tree itself, so it
always offers the subcommands, options and choices (``-f``, ``-c`` columns, ...) the command has."""
from __future__ import annotations

import argparse
import shlex


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, subcommands, options, {option: choices}) for the parser and every subparser below it."""
    subs, options, choices = {}, [], {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subs.update(action.choices)
        elif action.option_strings and action.help is not argparse.SUPPRESS:
            options += action.option_strings
            if action.choices:
                for opt in action.option_strings:
                    choices[opt] = [str(c) for c in action.choices if c is not None]
    yield path, sorted(subs), options, choices
    for name, sub in sorted(subs.items()):
        yield from _walk(sub, path + (name,))


def bash_script(parser: argparse.ArgumentParser, prog: str = "minbw") -> str:
    """The script (pure): ``source <(minbw completion bash)``."""
    words, subcommands, values = [], [], []
    for path, subs, options, choices in _walk(parser):
        key = shlex.quote(" ".join(path))
        words.append(f"        {key}) echo {shlex.quote(' '.join(subs + options))} ;;")
        subcommands.append(f"        {key}) echo {shlex.quote(' '.join(subs))} ;;")
        for opt, words_ in choices.items():
            key_opt = shlex.quote(" ".join(path) + "|" + opt)
            values.append(f"        {key_opt}) echo {shlex.quote(' '.join(words_))} ;;")
    fn = f"_{prog}"
    return "\n".join([
        f"# bash completion for {prog}: source <({prog} completion bash)",
        f"{fn}_words() {{", '    case "$1" in', *words, "    esac", "}",
        f"{fn}_subcommands() {{", '    case "$1" in', *subcommands, "    esac", "}",
        f"{fn}_choices() {{", '    case "$1" in', *values, "        *) return 1 ;;", "    esac", "}",
        f"{fn}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" w i values',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        w="${COMP_WORDS[i]}"',
        f'        if [[ " $({fn}_subcommands "$path") " == *" $w "* ]]; then path="${{path:+$path }}$w"; fi',
        "    done",
        f'    if values="$({fn}_choices "$path|$prev")"; then',
        '        COMPREPLY=($(compgen -W "$values" -- "$cur"))',
        "        return",
        "    fi",
        f'    COMPREPLY=($(compgen -W "$({fn}_words "$path")" -- "$cur"))',
        "}",
        f"complete -o default -F {fn} {prog}",
        ""])


def cmd_completion(args) -> int:
    from minbw.cli.main import build_parser
    print(bash_script(build_parser()), end="")
    return 0


def register(subparsers) -> None:
    sp = subparsers.add_parser("completion", help="print a shell completion script: "
                                                  "source <(minbw completion bash)")
    sp.add_argument("shell", choices=("bash",), help="the shell (bash; zsh reads it after bashcompinit)")
    sp.set_defaults(func=cmd_completion)
