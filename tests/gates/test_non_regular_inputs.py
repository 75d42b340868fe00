"""A FIFO, a device or any file that is not regular (after links are followed) where a gate,
mutation or store file is read is refused naming the file, exit 2, before it is read: opening a
FIFO for reading blocks until a writer comes, so `gates check` once hung for ever (issue 34.3).
Real `gates`/`mutate` processes on a real git project, each with a timeout so no test can hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from redfirst import yamlsrc

MUTATION = "mutation: m1\nfile: value.txt\nanchor: good\nreplace: bad\nexpect: {red: [value-check]}\n"


def _run(root: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-P", "-m", module, *args, "--root", str(root)],
                              capture_output=True, text=True, timeout=60, cwd=root)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{module} {' '.join(args)} still blocked after 60 s")


@pytest.mark.parametrize("command", [["check"], ["run"]])
def test_a_fifo_named_like_a_gate_file_is_refused_with_its_name_not_waited_on(make_project, command):
    root = make_project()
    pipe = root / "gates" / "pipe.yaml"
    os.mkfifo(pipe)
    proc = _run(root, "redfirst.gates.cli", *command)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{pipe}:1: not a regular file (a FIFO)" in both, both


def test_a_link_to_a_device_named_like_a_gate_file_is_refused(make_project):
    root = make_project()
    (root / "gates" / "zero.yaml").symlink_to("/dev/zero")
    proc = _run(root, "redfirst.gates.cli", "check")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert "zero.yaml:1: not a regular file (a character device)" in both, both


def test_a_fifo_in_the_mutations_folder_is_refused_not_skipped(make_project):
    root = make_project()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nmutations: {paths: [mutations]}\n")
    (root / "mutations").mkdir()
    (root / "mutations" / "m.yaml").write_text(MUTATION)
    assert _run(root, "redfirst.mutations.cli", "check").returncode == 0
    pipe = root / "mutations" / "pipe.yaml"
    os.mkfifo(pipe)
    proc = _run(root, "redfirst.mutations.cli", "check")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{pipe}:1: not a regular file (a FIFO)" in both, both


def test_the_one_reader_refuses_every_kind_of_non_regular_file_and_reads_a_link_to_a_regular_one(tmp_path):
    fifo, folder, link = tmp_path / "p.yaml", tmp_path / "d.yaml", tmp_path / "l.yaml"
    os.mkfifo(fifo)
    folder.mkdir()
    (tmp_path / "real.yaml").write_text("a: 1\n")
    link.symlink_to(tmp_path / "real.yaml")
    for path, why in ((fifo, "not a regular file (a FIFO)"), (Path("/dev/null"), "not a regular file"),
                      (folder, "a directory")):
        with pytest.raises(yamlsrc.YamlError) as caught:
            yamlsrc.read_text(path)
        assert caught.value.problems[0].line == 1 and why in caught.value.problems[0].message, caught.value
    assert yamlsrc.load_file(link).data == {"a": 1}
