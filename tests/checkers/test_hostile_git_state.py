"""Repository state beside the commits (round 5 of issue 34): a replace ref or a graft never stands in for
a commit checkers judge."""

from __future__ import annotations

import pytest

POLICY = "checkers:\n  append_only: [{path: idx.md}]\n"


def _edited_row_range(repo) -> str:
    repo.commit("seed", {"redfirst.yaml": POLICY, "idx.md": "row1\nrow2\n"})
    repo.git("checkout", "-q", "-b", "feature")
    return repo.commit("edit a row", {"idx.md": "row1 EDITED\nrow2\n"})


def _unedited_stand_in(repo) -> str:
    """A commit on main whose tree keeps every row: what a replace ref or a graft shows instead of the head."""
    tree = repo.git("rev-parse", "main^{tree}").strip()
    return repo.git("commit-tree", "-p", "main", "-m", "stand-in", tree).strip()


def test_a_replace_ref_never_stands_in_for_the_judged_head(repo, cli):
    """`git replace HEAD <commit keeping every row>` made checkers read the stand-in's objects: All 1 checks
    green over an edited append-only row. Replace refs are local state (or pushed as refs/replace/*), never
    the commits that land: checkers read the objects as they are (GIT_NO_REPLACE_OBJECTS)."""
    head = _edited_row_range(repo)
    repo.git("replace", head, _unedited_stand_in(repo))
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and "append-only" in out, out


@pytest.mark.parametrize("how", ["replace --graft", "info/grafts"])
def test_a_graft_never_hides_a_commit_of_the_range(repo, cli, how):
    """An unsigned commit, then a signed one whose parentage a graft rewrites to skip it: the range's commits
    must still be both (the graft is local state, the unsigned commit lands)."""
    repo.commit("seed", {"redfirst.yaml": 'checkers:\n  trailers: {require: {Signed-off-by: ".+@.+"}}\n'})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("unsigned change", {"a.txt": "a\n"})
    head = repo.commit("signed change\n\nSigned-off-by: A <a@example.invalid>", {"b.txt": "b\n"})
    main = repo.git("rev-parse", "main").strip()
    if how == "info/grafts":
        (repo.path / ".git" / "info").mkdir(exist_ok=True)
        (repo.path / ".git" / "info" / "grafts").write_text(f"{head} {main}\n")
    else:
        repo.git("replace", "--graft", head, main)
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and "trailer-required" in out, out
