"""The `script` check reads the checked-out head as data: it must be the head's bytes (round 5 of issue 34):
not the head's attributes' rendering of them, not an edit an index flag hides, not a sparse checkout."""

from __future__ import annotations

import pytest

SCRIPT = ("import pathlib, sys\n"
          "bad = [p for p in sorted(pathlib.Path('docs').glob('*.md')) if 'FORBIDDEN' in p.read_text(errors='replace')]\n"
          "for p in bad:\n    print(f'ERROR: {p}:1: FORBIDDEN')\n"
          "sys.exit(1 if bad else 0)\n")


def _script_range(repo, attributes: str = "") -> None:
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  script: [{path: scripts/check.py}]\n",
                         "scripts/check.py": SCRIPT, "docs/a.md": "fine\n"})
    repo.git("checkout", "-q", "-b", "feature")
    if attributes:
        repo.write(".gitattributes", attributes)
    # Written as the attributes want it in the working tree: the blob git stores is UTF-8 "FORBIDDEN here".
    encoding = "utf-16le" if "UTF-16LE" in attributes else "utf-8"
    (repo.path / "docs" / "b.md").write_bytes("FORBIDDEN here\n".encode(encoding))
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "add b")
    assert repo.git("cat-file", "-p", "HEAD:docs/b.md") == "FORBIDDEN here\n"


def _script_item(cli, repo) -> dict:
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    (item,) = [i for i in doc["items"] if i["id"].startswith("script:")]
    return item


def test_the_script_check_sees_the_violation_in_a_plain_checkout(repo, cli):
    _script_range(repo)
    assert _script_item(cli, repo)["verdict"] == "RED"


@pytest.mark.parametrize("how", ["working-tree-encoding", "assume-unchanged", "skip-worktree", "sparse-checkout"])
def test_a_working_tree_that_is_not_the_heads_bytes_is_no_green(repo, cli, how):
    """The script reads the checked-out head as data. The head's own .gitattributes (`working-tree-encoding=
    UTF-16LE`: the file checked out is UTF-16, no 'FORBIDDEN' in its bytes), an index flag that hides an edit
    from `git status` (assume-unchanged, skip-worktree) or a sparse checkout that leaves the file out gave
    All 1 checks green over a head whose blob the base's script refuses. The working tree must be the
    head's bytes; else NO_DECISION naming the file."""
    _script_range(repo, "docs/b.md working-tree-encoding=UTF-16LE\n" if how == "working-tree-encoding" else "")
    if how in ("assume-unchanged", "skip-worktree"):
        repo.git("update-index", f"--{how}", "docs/b.md")
        (repo.path / "docs" / "b.md").write_text("fixed only here\n")
    elif how == "sparse-checkout":
        repo.git("sparse-checkout", "set", "--no-cone", "/*", "!/docs/b.md")
        assert not (repo.path / "docs" / "b.md").exists()
    else:
        (repo.path / "docs" / "b.md").unlink()
        repo.git("checkout", "--", "docs/b.md")     # as a fresh clone checks it out
        assert b"F\x00O\x00" in (repo.path / "docs" / "b.md").read_bytes()
    assert repo.git("status", "--porcelain", "--untracked-files=no") == ""
    item = _script_item(cli, repo)
    assert item["verdict"] == "NO_DECISION", item
    assert "docs/b.md" in item["reason"], item
