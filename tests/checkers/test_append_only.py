"""append_only in range mode: the Done-when lines of the record-checkers issue."""

from __future__ import annotations

POLICY = "checkers:\n  append_only:\n    - {path: index.md, mode: insert}\n"
INDEX = "# Index\n\n| Issue | Title |\n|---|---|\n| 1 | first |\n| 2 | second |\n"


def _branch_from_main(repo) -> None:
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": INDEX, ".gitattributes": "index.md merge=union\n"})
    repo.git("checkout", "-q", "-b", "feature")


def test_committed_edit_of_old_row_fails_naming_file_and_line(repo, cli):
    _branch_from_main(repo)
    repo.commit("edit an old row", {"index.md": INDEX.replace("| 1 | first |", "| 1 | FIRST (edited) |")})
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    assert "index.md:5: append-only:" in out
    assert "restore the old text" in out
    assert "All" not in out.splitlines()[-1]


def test_appending_a_row_is_green(repo, cli):
    _branch_from_main(repo)
    repo.commit("append", {"index.md": INDEX + "| 3 | third |\n"})
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0
    assert out.splitlines()[-1] == "All 1 checks green"


def test_unstaged_edit_is_not_reported(repo, cli):
    _branch_from_main(repo)
    repo.commit("append", {"index.md": INDEX + "| 3 | third |\n"})
    repo.write("index.md", INDEX.replace("| 2 | second |", "| 2 | changed |") + "| 3 | third |\n")
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out
    assert "append-only" not in out


def test_staged_edit_is_reported_in_staged_mode(repo, cli):
    _branch_from_main(repo)
    repo.write("index.md", INDEX.replace("| 2 | second |", "| 2 | changed |"))
    repo.git("add", "index.md")
    rc, out, _ = cli("run", "--root", str(repo.path), "--staged")
    assert rc == 1
    assert "index.md:6: append-only:" in out


def test_the_first_commit_has_no_old_lines_to_keep(repo, cli):
    # Staged with no HEAD yet: every line is new, so the pre-commit stage judges it (GREEN), never
    # a NO_DECISION that would block the first commit.
    repo.write("redfirst.yaml", POLICY)
    repo.write("index.md", INDEX)
    repo.git("add", "-A")
    rc, out, _ = cli("run", "--root", str(repo.path), "--staged", "--records-only")
    assert rc == 0 and out.splitlines()[-1] == "All 1 checks green"


def test_main_moving_on_does_not_fail_the_branch_unmerged_or_merged(repo, cli):
    _branch_from_main(repo)
    repo.commit("branch row", {"index.md": INDEX + "| 4 | from the branch |\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main row", {"index.md": INDEX + "| 3 | from main |\n"})
    repo.git("checkout", "-q", "feature")
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out
    repo.git("merge", "-q", "--no-edit", "main")  # merge=union keeps both appended rows
    assert "from main" in (repo.path / "index.md").read_text()
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out


def test_unresolvable_base_is_no_decision_exit_3(repo, cli):
    _branch_from_main(repo)
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "no-such-branch")
    assert rc == 3
    assert "NO_DECISION" in out and "no-such-branch" in out
    assert "green" not in out.lower()
    # Nothing was judged, so nothing was selected: 3 always, even where NO_DECISION is allowed.
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "no-such-branch",
                              "--allow-no-decision")
    assert rc == 3
    assert "NO_DECISION" in out


def test_policy_is_read_from_the_merge_base(repo, cli):
    _branch_from_main(repo)
    repo.commit("drop the rule and break it", {
        "redfirst.yaml": "checkers:\n  specs:\n    - {glob: 'none/*.md', sections: [Scope]}\n",
        "index.md": INDEX.replace("| 1 | first |", "| 1 | rewritten |"),
    })
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    red = [i for i in doc["items"] if i["verdict"] == "RED"]
    assert [i["id"] for i in red] == ["append_only:index.md"]
    assert red[0]["findings"][0]["file"] == "index.md"


def test_tail_mode_refuses_an_insert_that_insert_mode_accepts(repo, cli):
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  append_only:\n    - {path: log.md, mode: tail}\n"
                                          "    - {path: idx.md, mode: insert}\n",
                         "log.md": "a\nb\n", "idx.md": "a\nb\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("insert in the middle", {"log.md": "a\nnew\nb\n", "idx.md": "a\nnew\nb\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    assert verdicts == {"append_only:log.md": "RED", "append_only:idx.md": "GREEN"}
    assert rc == 1


def test_deleting_the_file_is_red(repo, cli):
    _branch_from_main(repo)
    repo.git("rm", "-q", "index.md")
    repo.git("commit", "-q", "-m", "delete")
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and "index.md was deleted" in out


def test_shallow_clone_without_merge_base_is_no_decision(repo, cli, tmp_path):
    _branch_from_main(repo)
    repo.commit("append", {"index.md": INDEX + "| 3 | third |\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves", {"other.txt": "x\n"})
    clone = tmp_path / "shallow"
    repo.git("clone", "-q", "--depth", "1", "--no-single-branch", f"file://{repo.path}", str(clone))
    rc, out, _ = cli("run", "--root", str(clone), "--base", "origin/main", "--head", "origin/feature")
    assert rc == 3
    assert "shallow clone" in out
    rc, out, _ = cli("run", "--root", str(clone), "--base", "origin/main", "--head", "origin/feature",
                     "--allow-no-decision")
    assert rc == 3 and "shallow clone" in out


def test_a_row_removed_over_a_criss_cross_history_is_red_whichever_merge_base_git_names(repo, cli, monkeypatch):
    # Two merge bases: `a` (holds row 3) and `b` (does not). `git merge-base` names one of them by
    # commit date; judged against `b` alone, the head's removal of row 3 looks like no edit at all.
    def at(seconds: int) -> None:
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{seconds} +0000")
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"@{seconds} +0000")

    at(1_000_000)
    repo.commit("seed", {"redfirst.yaml": POLICY, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "a")
    at(2_000_000)
    a = repo.commit("row 3", {"index.md": INDEX + "| 3 | third |\n"})
    repo.git("checkout", "-q", "-b", "b", "main")
    at(3_000_000)
    b = repo.commit("elsewhere", {"other.txt": "x\n"})
    at(4_000_000)
    repo.git("checkout", "-q", "a")
    repo.git("merge", "-q", "--no-edit", b)
    repo.git("checkout", "-q", "b")
    repo.git("merge", "-q", "--no-edit", a)
    repo.commit("drop row 3", {"index.md": INDEX})
    assert sorted(repo.git("merge-base", "--all", "a", "b").split()) == sorted([a, b])
    assert repo.git("merge-base", "a", "b").strip() == b  # the base without the row
    assert "-| 3 | third |" in repo.git("diff", "a", "b")
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "a", "--head", "b")
    assert rc == 1, out
    assert f"line 7 of index.md at {a[:12]} removed" in out
    assert "2 merge bases" in err


def test_a_range_whose_head_is_already_in_the_base_judges_no_change(repo, cli):
    # `--base feature --head main`: main is the merge base, so the range holds no change, while
    # `git diff feature main` shows row 3 removed. Nothing was compared, so nothing is green.
    _branch_from_main(repo)
    repo.commit("row 3", {"index.md": INDEX + "| 3 | third |\n"})
    assert "-| 3 | third |" in repo.git("diff", "feature", "main")
    for base, head in (("feature", "main"), ("main", "main")):
        rc, doc = cli.json("run", "--root", str(repo.path), "--base", base, "--head", head)
        assert rc == 3, doc
        (item,) = doc["items"]
        assert item["verdict"] == "NO_DECISION" and "empty" in item["reason"], item
