"""The `command` driver hands a format's per-case arguments to the gate's program (with_args): to the
last program of a list or of a shell command, or to nobody; never to another command. Real `sh`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from redfirst.gates.drivers.command import with_args

ARG = "--dt-duration=true"


@pytest.fixture
def args_of(tmp_path: Path) -> Path:
    # a program that writes the arguments it was given, one a line, to args.<its name>
    prog = tmp_path / "show"
    prog.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "args.$1"\n')
    prog.chmod(0o755)
    return prog


def _run(argv: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["sh", "-c", argv[0]] if len(argv) == 1 else list(argv)
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize("command", ["{p} last", "{p} first && {p} last", "{p} first; {p} last 2>&1",
                                     "true\n{p} last", "{p} last 'a b'", "{p} last > out"])
def test_a_shell_command_ending_in_a_simple_command_hands_the_args_to_its_last_program(
        args_of: Path, tmp_path: Path, command: str) -> None:
    done = _run(with_args(command.format(p=args_of), [ARG]), tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "args.last").read_text().splitlines()[-1] == ARG
    assert not (tmp_path / "args.first").exists() or ARG not in (tmp_path / "args.first").read_text()


@pytest.mark.parametrize("command", ["{p} last | cat", "{p} last;", "{p} last # note", "if true; then {p} last; fi",
                                     "echo $({p} last)", "{p} last &", "{p} 'last"])
def test_a_shell_command_that_does_not_end_in_a_simple_command_runs_as_written(
        args_of: Path, command: str) -> None:
    text = command.format(p=args_of)
    assert with_args(text, [ARG]) == (text,)


def test_a_list_gets_the_args_at_its_end(args_of: Path, tmp_path: Path) -> None:
    argv = with_args([str(args_of), "last", "-x"], [ARG])
    assert argv == (str(args_of), "last", "-x", ARG)
    assert _run(argv, tmp_path).returncode == 0
    assert (tmp_path / "args.last").read_text().splitlines() == ["last", "-x", ARG]
