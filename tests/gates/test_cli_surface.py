"""One tool: --version on all four commands, --json on every deciding and listing command
(on the shipped output schema), help text on every option, mutate's subcommands in its
help, and shell completion. Real processes; real projects in tmp folders."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from redfirst import clitools

COMMANDS = {"gates": "redfirst.gates.cli", "mutate": "redfirst.mutations.cli", "leases": "redfirst.leases.cli", "checkers": "redfirst.checkers.cli"}


def cli(command: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", COMMANDS[command], *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


def output_schema() -> dict:
    return json.loads(cli("gates", "schema", "--output").stdout)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_prints_its_version(command: str):
    proc = cli(command, "--version")
    assert proc.returncode == 0, proc.stderr
    assert f"redfirst {clitools.version()}" in proc.stdout and clitools.version() != "unknown"


def test_every_option_of_every_parser_has_help_text():
    missing = []
    for command, top in clitools.all_parsers().items():
        for path, parser in clitools.walk(top):
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                    continue
                if not action.help or action.help == argparse.SUPPRESS:
                    missing.append(f"{command} {' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing


def test_mutate_help_lists_its_subcommands():
    proc = cli("mutate", "--help")
    assert proc.returncode == 0
    for name in ("check", "sweep", "promote"):
        assert f"  {name} " in proc.stdout, proc.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "mutations").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "value.txt").write_text("good\n")
    (root / "gates" / "g.yaml").write_text(
        "gate: g\ndriver: {type: command, run: \"grep -qx good value.txt && echo '1 passed, 0 failed' || "
        "{ echo '0 passed, 1 failed'; exit 1; }\", format: plain}\n")
    (root / "mutations" / "m.yaml").write_text(
        "mutation: bad\nfile: value.txt\nanchor: good\nreplace: bad\nexpect: {red: [g]}\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=root,
                       check=True, capture_output=True)
    assert cli("gates", "run", "-q", "--root", str(root)).returncode == 0
    return root


def test_every_deciding_and_listing_command_prints_json_on_the_output_schema(project: Path):
    schema = output_schema()
    record = json.loads(cli("gates", "list", "--json", "--root", str(project)).stdout)["items"][0]["evidence"]
    runs = {
        ("gates", "check"): (["--json", "--root", str(project)], 0),
        ("gates", "list"): (["--json", "--root", str(project)], 0),
        ("gates", "show"): ([record, "--json", "--root", str(project)], 0),
        ("gates", "regrade"): ([record, "--json", "--root", str(project)], 0),
        ("gates", "proofs"): (["--json", "--root", str(project)], 0),
        ("mutate", "check"): (["--json", "--root", str(project)], 0),
    }
    for (command, sub), (args, code) in runs.items():
        proc = cli(command, sub, *args, cwd=project)
        doc = json.loads(proc.stdout)
        jsonschema.validate(doc, schema)
        assert doc["exit"] == proc.returncode, (command, sub, proc.stderr)
        if code is not None:
            assert proc.returncode == code, (command, sub, proc.stderr)
    # checkers: --json is --format json
    as_json = cli("checkers", "run", "--json", "--root", str(project), cwd=project)
    as_format = cli("checkers", "run", "--format", "json", "--root", str(project), cwd=project)
    assert as_json.returncode == as_format.returncode and json.loads(as_json.stdout) == json.loads(as_format.stdout)
    assert [i["verdict"] for i in json.loads(cli("gates", "regrade", record, "--json", "--root",
                                                 str(project)).stdout)["items"]] == ["GREEN"]
    proofs = json.loads(cli("gates", "proofs", "--json", "--root", str(project)).stdout)["items"]
    assert [(i["id"], i["verdict"]) for i in proofs] == [("g", "NO_DECISION")]


def test_leases_subcommands_take_json_after_their_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "leases.sqlite"))
    for sub in ("boxes", "status", "audit"):
        after = cli("leases", "--root", str(tmp_path), sub, "--json")
        before = cli("leases", "--root", str(tmp_path), "--json", sub)
        assert after.returncode == 0, after.stderr
        assert json.loads(after.stdout).keys() == json.loads(before.stdout).keys()


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_shell_completion_completes_subcommands_and_options(shell: str, tmp_path: Path):
    proc = cli("gates", "completion", shell)
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "complete.sh"
    script.write_text(proc.stdout)
    if shell == "zsh":
        assert "bashcompinit" in proc.stdout
        return
    if shutil.which("bash") is None:
        pytest.skip("no bash")

    def complete(*words: str) -> list[str]:
        line = " ".join(words)
        probe = (f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _redfirst_complete; "
                 "printf '%s\\n' \"${COMPREPLY[@]}\"")
        return subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True).stdout.split()

    assert {"run", "check", "regrade", "completion"} <= set(complete("gates", ""))
    assert "--require-proven" in complete("gates", "run", "--req")
    assert {"check", "sweep", "promote"} <= set(complete("mutate", ""))
    assert "--json" in complete("leases", "status", "--j")
    assert "--format" in complete("checkers", "run", "--fo")


def test_every_leases_json_document_is_on_the_output_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "leases.sqlite"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 2, labels: {gpu_model: h200}}\n")
    schema = output_schema()

    def document(*args: str) -> dict:
        proc = cli("leases", "--root", str(tmp_path), *args)
        doc = json.loads(proc.stdout)
        jsonschema.validate(doc, schema)
        assert doc["exit"] == proc.returncode and doc["command"] == f"leases {args[0]}", (args, proc.stderr)
        return doc

    assert "thor" in [b["name"] for b in document("boxes", "--json")["boxes"]]
    lease = document("acquire", "thor", "--gpus", "1", "--ttl", "30", "--json")
    assert [x["id"] for x in document("status", "--json")["leases"]] == [lease["id"]]
    assert document("renew", lease["id"], "--token", lease["token"], "--json")["id"] == lease["id"]
    assert document("release", lease["id"], "--token", lease["token"], "--json")["released"] == lease["id"]
    assert {e["event"] for e in document("audit", "--json")["events"]} >= {"grant", "release"}
    refused = document("renew", lease["id"], "--token", lease["token"], "--json")   # released: a fault, exit 1
    assert refused["exit"] == 1 and lease["id"] in " ".join(refused["errors"])


USAGE_ERRORS = [
    ("gates", ["run", "--json", "--jobs", "many"]),
    ("gates", ["regrade", "--json"]),
    ("gates", ["--json"]),
    ("mutate", ["--json", "--jobs", "many"]),
    ("mutate", ["check", "--json", "--no-such-option"]),
    ("mutate", ["sweep", "--json", "--no-such-option"]),
    ("mutate", ["promote", "--json"]),
    ("leases", ["status", "--json", "--no-such-option"]),
    ("leases", ["--json", "acquire"]),
    ("checkers", ["run", "--json", "--no-such-option"]),
    ("checkers", ["run", "--format", "json", "--only"]),
]


@pytest.mark.parametrize(("command", "args"), USAGE_ERRORS, ids=[" ".join([c, *a]) for c, a in USAGE_ERRORS])
def test_a_usage_error_under_json_is_one_json_error_document_exit_2(command: str, args: list[str], tmp_path: Path):
    proc = cli(command, *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "usage:" in proc.stderr and "error:" in proc.stderr       # argparse's own text stays on stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, output_schema())
    message = proc.stderr.strip().splitlines()[-1].split(" error: ", 1)[1]
    assert (doc["exit"], doc["items"], doc["errors"]) == (2, [], [message])
    assert doc["command"].split()[0] == command


def test_a_usage_error_without_json_prints_nothing_on_stdout(tmp_path: Path):
    proc = cli("gates", "run", "--jobs", "many", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("usage: gates run")
