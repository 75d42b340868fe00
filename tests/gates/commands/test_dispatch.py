"""`gates` dispatches to one module per subcommand, `gates/commands/<name>.py`, as `mutate`
does: the module declares the subcommand's arguments and does its work; `redfirst/gates/cli.py`
only builds the parser from them and dispatches."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from redfirst import clitools
from redfirst.gates import cli

CLI = Path(cli.__file__)


def test_every_subcommand_runs_the_main_of_its_own_module():
    found = clitools.subparsers(cli.parser())
    assert {"run", "check", "schema", "list", "show", "regrade", "export", "gc", "red-first", "proofs", "probe",
            "completion"} <= set(found)
    for name, sub in found.items():
        module = importlib.import_module(f"redfirst.gates.commands.{name.replace('-', '_')}")
        assert sub.get_default("func") is module.main, name


def test_cli_holds_no_subcommand_work():
    tree = ast.parse(CLI.read_text(encoding="utf-8"))
    functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert functions == ["parser", "main"], functions


def test_a_subcommand_through_the_real_entry_point_still_works(tmp_path: Path):
    (tmp_path / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "g.yaml").write_text("gate: g\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n")
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "check", "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("1 gate(s) valid.\n")
