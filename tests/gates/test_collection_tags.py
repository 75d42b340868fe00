"""A YAML tag on a collection (`!!omap`, `!!set`, `!!python/...`, a custom `!tag`) in any file redfirst reads is
refused at its file:line (exit 2), as a scalar tag the loader cannot build is: it was read as the plain mapping or
list, so a file meant for another reader (or a typo) loaded as if the tag were not there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.gates.test_fuzz_files import GATE_SEED, KINDS, check_one, new_root

TAGS = ["!!omap", "!!set", "!!python/object:os.system", "!!python/object/apply:os.system", "!custom",
        "!!python/tuple"]


@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("name", sorted(set(KINDS) - {"store"}))
def test_a_tag_on_a_collection_is_refused_at_its_line_in_every_file_kind(name: str, tag: str,
                                                                          tmp_path: Path) -> None:
    kind = KINDS[name]
    root = new_root(tmp_path)
    for text, line in ((f"--- {tag}\n{kind.seed}", 1), (f"{kind.seed}extra: {tag} [a, b]\n",
                                                       kind.seed.count("\n") + 1)):
        check_one(kind, root, text)        # never a traceback, every problem at file:line
        problems = kind.load(root, root / kind.file) or []
        at = f"{root / kind.file}:{line}: "
        assert any(p.startswith(at) and "tag" in p for p in problems), (problems, text)


@pytest.mark.parametrize("argv", [
    [sys.executable, "-P", "-m", "redfirst.gates.cli", "check", "--root", "{root}"],
    [sys.executable, "-P", "-m", "redfirst.leases.cli", "--root", "{root}", "status"],
    [sys.executable, "-P", "-m", "redfirst.checkers.cli", "run", "--config", "redfirst.yaml", "--root", "{root}"],
], ids=["gates", "leases", "checkers"])
def test_a_tagged_list_in_redfirst_yaml_is_exit_2_from_every_command(argv: list[str], tmp_path: Path) -> None:
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "g.yaml").write_text(GATE_SEED)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "redfirst.yaml").write_text("gates: {paths: [gates]}\nleases:\n  boxes: !mine\n    thor: {gpus: 1}\n"
                                            "checkers:\n  append_only: !!python/object/apply:os.system\n"
                                            "    - {path: index.md}\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "seed"], check=True)
    proc = subprocess.run([w.replace("{root}", str(tmp_path)) for w in argv], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={**__import__("os").environ, "REDFIRST_LEASES_DB": str(tmp_path / "l.db")})
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert "redfirst.yaml:3: " in both or "redfirst.yaml:6: " in both, both
