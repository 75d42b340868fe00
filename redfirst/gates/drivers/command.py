"""Driver `command`: any program, its output read by the gate's `format`."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst.gates import parsers
from redfirst.gates.drivers import NOT_FOUND, Driver, Invocation
from redfirst.gates.model import Gate
from redfirst.gates.parsers._common import tail
from redfirst.verdict import Cause, Outcome, error


class CommandDriver(Driver):
    name = "command"
    default_format = "none"
    option_keys = frozenset({"junit"})
    counts_format = None
    runner = None

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        run = gate.driver.run
        junit = gate.driver.option("junit")
        fmt = gate.driver.format
        return Invocation(
            argv=with_args(run, parsers.get(fmt).per_case_args if fmt in parsers.REGISTRY else ()),
            cwd=root / gate.driver.cwd,
            junit=(root / gate.driver.cwd / junit) if junit else None,
        )

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        return None

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        if code in NOT_FOUND:
            return error(Cause.CONFIG, f"{NOT_FOUND[code]} (exit {code}): {tail(stderr)}")
        return None


# shell words after which an appended word is not an argument of the command before them
_CONTROL = {"if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in",
            "select", "function", "time", "!", "{", "}", "[[", "]]"}


def with_args(run: str | Sequence[str], args: Sequence[str]) -> tuple[str, ...]:
    """The argv that runs `run` with `args` handed to its program (Invocation.argv: a string `run` is one
    shell command). A list gets `args` at its end. A shell command gets them at the end of its last
    simple command where that is certain (`cd build && ./tests`); one that ends in a pipe, an operator,
    a comment, a compound command or a substitution runs unchanged. A caller may rely on: the result
    runs the command `run` names, with `args` given to its last program or not given at all, never to
    another command (`./tests | tee log` stays as written)."""
    if not isinstance(run, str):
        return (*run, *args)
    if not args or not _ends_in_simple_command(run):
        return (run,)
    return (f"{run} {shlex.join(args)}",)


def _ends_in_simple_command(command: str) -> bool:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    try:
        tokens = list(lexer)
    except ValueError:   # unbalanced quotes: the shell will say so
        return False
    last: list[str] = []
    for token in tokens:
        if token in ("&&", "||", ";", "&"):
            last = []
        else:
            last.append(token)
    # a redirection (`2>&1`, `> log`) may stand before the appended words; a pipe, a subshell, a here
    # document, a comment or a substitution may not
    return bool(last) and not any(
        set(word) & set("|()`") or word.startswith(("#", "<<")) or word == "$" for word in last
    ) and last[0] not in _CONTROL and last[-1] not in _CONTROL and not set(last[-1]) <= set("<>&")


DRIVER = CommandDriver()
