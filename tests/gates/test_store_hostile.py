"""A hostile evidence store and hostile gate files are messages, never tracebacks (issue 34.3):
`gates list`/`gates gc` beside a dangling symbolic link, a `verdict.json` that is a JSON list, a
`record.json` with a key written twice, a whole bound written as a float, invalid UTF-8."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _gates(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", *args, "--root", str(root)],
                          capture_output=True, text=True, timeout=300, cwd=root)


def _stored(make_project) -> tuple[Path, Path]:
    root = make_project()
    proc = _gates(root, "run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (record,) = (root / ".redfirst" / "evidence").iterdir()
    return root, record


@pytest.mark.parametrize("command", [["list"], ["list", "--json"], ["gc"]])
def test_a_dangling_link_in_the_store_is_named_not_a_traceback(make_project, command):
    root, record = _stored(make_project)
    stray = root / ".redfirst" / "evidence" / "dangling"
    stray.symlink_to(root / "nowhere")
    proc = _gates(root, *command)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{stray}: " in proc.stderr and "not a record folder" in proc.stderr
    assert record.is_dir() and stray.is_symlink()  # gc removes no record and follows no link
    if command == ["list"]:
        assert record.name[:12] in proc.stdout  # the real records are still listed


@pytest.mark.parametrize("command", [["list"], ["list", "--json"]])
def test_a_verdict_file_that_is_a_json_list_is_named_with_its_line(make_project, command):
    root, record = _stored(make_project)
    (record / "verdict.json").write_text("[1,\n 2]\n")
    proc = _gates(root, *command)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{record / 'verdict.json'}:1: " in proc.stderr and "JSON object" in proc.stderr
    if command[-1] == "--json":
        assert json.loads(proc.stdout)["exit"] == 2


def test_a_record_with_a_key_written_twice_is_refused_naming_its_line(make_project):
    root, record = _stored(make_project)
    text = (record / "record.json").read_text()
    (record / "record.json").write_text(text.replace('\n "gate_id"', '\n "gate_id": "forged",\n "gate_id"', 1))
    for command in (["show", record.name], ["show", record.name, "--json"], ["regrade", record.name]):
        proc = _gates(root, *command)
        both = proc.stdout + proc.stderr
        assert proc.returncode == 2 and "Traceback" not in both, both
        assert f"{record / 'record.json'}:" in both and "duplicate key 'gate_id'" in both


@pytest.mark.parametrize(("bound", "run_exit"), [("cases: 1.0", 0), ("cases: 2.0", 1), ("cases: {min: 1.0}", 0),
                                               ("assertions: 2.0", 2)])
def test_a_whole_bound_written_as_a_float_is_checked_and_holds_not_a_crash(make_project, bound, run_exit):
    gate = ("gate: floaty\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n"
            f"assert: {{exit: 0, {bound}}}\n")
    root = make_project({"f.yaml": gate}, value_check=False)
    for command, expected in ((["check"], 2 if run_exit == 2 else 0), (["run"], run_exit)):
        proc = _gates(root, *command)
        both = proc.stdout + proc.stderr
        assert "Traceback" not in both and proc.returncode == expected, both
    if run_exit == 2:
        assert f"{root / 'gates' / 'f.yaml'}:3: " in both


@pytest.mark.parametrize("where", ["gates/bad.yaml", "redfirst.yaml"])
def test_invalid_utf8_names_file_and_the_line_of_the_bad_byte(make_project, where):
    root = make_project()
    path = root / where
    path.write_bytes((path.read_bytes() if path.exists() else b"") + b"# line\n# caf\xe9\n")
    lines = path.read_bytes().count(b"\n")
    proc = _gates(root, "check")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{path}:{lines}: " in both and "UTF-8" in both


@pytest.mark.parametrize("link", [".redfirst/evidence", ".redfirst"])
def test_a_store_folder_that_is_a_link_is_refused_and_nothing_it_points_at_is_removed(tmp_path, link):
    """A repository may commit `.redfirst/evidence` (or `.redfirst`) as a symbolic link: `gates gc
    --max-mib 0` followed it and removed every folder of the target (a user's ~/precious/photos), and
    `gates list` listed them as records (round 5 of issue 34). The store is real folders or a message."""
    outside = tmp_path / "precious"
    for name in ("photos", "thesis"):
        (outside / "evidence" / name).mkdir(parents=True)
        (outside / "evidence" / name / "keep.txt").write_text("mine\n")
        (outside / name).mkdir()
    root = tmp_path / "repo"
    root.mkdir()
    (root / "redfirst.yaml").write_text("gates: {}\n")
    (root / ".redfirst").mkdir()
    if link == ".redfirst":
        (root / ".redfirst").rmdir()
        (root / ".redfirst").symlink_to(outside)
    else:
        (root / ".redfirst" / "evidence").symlink_to(outside)
    for command in (["gc", "--max-mib", "0"], ["list"], ["list", "--json"]):
        proc = _gates(root, *command)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
        assert "symbolic link" in proc.stderr and str(root / link) in proc.stderr, proc.stderr
        assert "photos" not in proc.stdout
    assert sorted(p.name for p in outside.iterdir()) == ["evidence", "photos", "thesis"]
    assert sorted(p.name for p in (outside / "evidence").iterdir()) == ["photos", "thesis"]


def test_a_folder_of_the_store_that_holds_no_record_is_neither_listed_nor_removed(tmp_path):
    """A folder put in the store by hand (no record.json) was listed as a record and removed by gc."""
    root = tmp_path / "repo"
    notes = root / ".redfirst" / "evidence" / "notes"
    notes.mkdir(parents=True)
    (notes / "todo.txt").write_text("x" * 100_000)
    (root / "redfirst.yaml").write_text("gates: {}\n")
    proc = _gates(root, "gc", "--max-mib", "0")
    assert proc.returncode == 2 and f"{notes}: not a record folder" in proc.stderr, proc.stdout + proc.stderr
    assert (notes / "todo.txt").is_file()


def test_a_hand_made_record_never_prints_a_forged_line_or_a_verdict_that_is_none(tmp_path):
    """A folder named with an escape and a newline, its verdict.json saying `"verdict": "GREEN\\nforged"`: `gates
    list` printed a forged `GREEN` line, coloured, and `--json` a verdict outside the output schema's (round 5 of
    issue 34). Each record is one line; a summary that is not one redfirst writes is named and read as none."""
    from importlib import resources

    import jsonschema

    root = tmp_path / "repo"
    folder = root / ".redfirst" / "evidence" / "x\x1b[31m\nGREEN  forged-gate  all good"
    folder.mkdir(parents=True)
    (folder / "record.json").write_text("{}\n")
    (folder / "verdict.json").write_text(json.dumps({"verdict": "GREEN\nforged", "gate": "g\x1b[2J"}))
    (root / "redfirst.yaml").write_text("gates: {}\n")
    proc = _gates(root, "list")
    assert proc.returncode == 2 and "verdict.json:1: " in proc.stderr, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "\x1b" not in proc.stdout and not [line for line in lines if line.startswith("GREEN")], lines
    proc = _gates(root, "list", "--json")
    schema = json.loads(resources.files("redfirst.gates").joinpath("schema/output.schema.json").read_text())
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, schema)
    assert doc["items"][0]["verdict"] == "ERROR"
    proc = _gates(root, "show", "x")     # the record's own header lines, and its error, are one line each
    lines = (proc.stdout + proc.stderr).splitlines()
    assert "\x1b" not in proc.stdout + proc.stderr and not [line for line in lines if line.startswith("GREEN")], lines
