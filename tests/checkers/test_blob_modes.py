"""Blob modes are judged: a record that git stores as a symbolic link (120000), a submodule (160000),
or that is deleted or renamed in the range is a finding naming the path, never read through the
link's text. Modes are made the ways git makes them: `ln -s`, `update-index --cacheinfo`, a real
submodule."""

from __future__ import annotations

import json
import os

import pytest

APPEND_POLICY = "checkers:\n  append_only:\n    - {path: index.md, mode: insert}\n"
INDEX = "# Index\n\n| Issue | Title |\n|---|---|\n| 1 | first |\n"
SPEC_POLICY = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope, Gates]}\n"
SPEC = "# S\n\n## Scope\n\nRows ENG-A.\n\n## Gates\n\n`make test`\n"
MATRIX_POLICY = ("checkers:\n  matrices:\n    states: [READY, DONE]\n"
                 "    files:\n      - {path: m.md, id_pattern: \"ENG-[A-Z]+\"}\n")
MATRIX = "# M\n\n| ID | State |\n|---|---|\n| `ENG-A` | `READY` |\n"
ANCHOR_POLICY = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"


def _findings(doc: dict, rule: str | None = None) -> list[dict]:
    return [f for i in doc["items"] for f in i["findings"] if rule is None or f["rule"] == rule]


def _commit_as_link_holding(repo, path: str, text: str) -> None:
    """Commit `path` as a symbolic link (mode 120000) whose stored target is `text`: what a checker
    that reads the blob sees as the file's text."""
    blob = repo.git("hash-object", "-w", "--stdin", input=text).strip()
    repo.git("rm", "-q", "--cached", "--ignore-unmatch", path)
    (repo.path / path).unlink(missing_ok=True)
    repo.git("update-index", "--add", "--cacheinfo", f"120000,{blob},{path}")
    repo.git("commit", "-q", "-m", f"{path} as a link")
    assert repo.git("ls-tree", "HEAD", path).split()[0] == "120000"


def _submodule(new_repo, repo, path: str) -> None:
    sub = new_repo("sub")
    sub.commit("sub", {"x.c": "int x;\n"})
    repo.git("rm", "-q", "--ignore-unmatch", path)
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), path)
    repo.git("commit", "-q", "-m", f"{path} as a submodule")
    assert repo.git("ls-tree", "HEAD", path).split()[0] == "160000"


def _blob_mode(doc: dict, path: str) -> dict:
    (f,) = [f for f in _findings(doc, "blob-mode") if f["file"] == path]
    return f


def test_an_append_only_file_turned_into_a_link_is_a_finding_not_its_link_text(repo, cli):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    _commit_as_link_holding(repo, "index.md", INDEX + "| 2 | second |\n")  # its text would pass
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert "symbolic link (mode 120000)" in _blob_mode(doc, "index.md")["message"]


def test_an_append_only_file_turned_into_a_submodule_is_a_finding(repo, cli, new_repo):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    _submodule(new_repo, repo, "index.md")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert "submodule (mode 160000)" in _blob_mode(doc, "index.md")["message"]


def test_an_append_only_file_under_a_folder_turned_into_a_link_is_a_finding(repo, cli):
    policy = "checkers:\n  append_only:\n    - {path: rec/index.md}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "rec/index.md": INDEX, "elsewhere/index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "-r", "rec")
    os.symlink("elsewhere", repo.path / "rec")
    repo.commit("rec is now a link to a folder")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert "lies under rec, which is a symbolic link" in _blob_mode(doc, "rec/index.md")["message"]


def test_a_new_append_only_file_that_is_a_link_is_a_finding(repo, cli):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY})
    repo.git("checkout", "-q", "-b", "feature")
    _commit_as_link_holding(repo, "index.md", INDEX)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    _blob_mode(doc, "index.md")


def test_a_spec_stored_as_a_link_is_a_finding_not_its_link_text(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": SPEC, "specs/b.md": SPEC})
    _commit_as_link_holding(repo, "specs/b.md", SPEC)  # the stored text is a complete spec
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    _blob_mode(doc, "specs/b.md")


def test_a_spec_staged_as_a_link_is_a_finding_in_the_pre_commit_run(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": SPEC})
    blob = repo.git("hash-object", "-w", "--stdin", input=SPEC).strip()
    repo.git("update-index", "--add", "--cacheinfo", f"120000,{blob},specs/b.md")
    rc, doc = cli.json("run", "--root", str(repo.path), "--staged")
    assert rc == 1, doc
    _blob_mode(doc, "specs/b.md")


@pytest.mark.parametrize("how", ["deleted", "renamed"])
def test_a_spec_deleted_or_renamed_in_the_range_is_a_finding_naming_it(repo, cli, how):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": SPEC, "specs/b.md": SPEC})
    repo.git("checkout", "-q", "-b", "feature")
    if how == "deleted":
        repo.git("rm", "-q", "specs/b.md")
    else:
        repo.git("mv", "specs/b.md", "specs/c.md")
    repo.commit(how)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "spec-removed")
    assert f["file"] == "specs/b.md" and "deleted or renamed" in f["message"]


def test_a_spec_folder_turned_into_a_link_in_the_range_is_a_finding(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": SPEC, "docs/specs/a.md": SPEC})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "-r", "specs")
    os.symlink("docs/specs", repo.path / "specs")
    repo.commit("specs is a link")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert "lies under specs" in _blob_mode(doc, "specs/a.md")["message"]


def test_a_matrix_stored_as_a_link_is_a_finding_not_its_link_text(repo, cli):
    repo.commit("seed", {"redfirst.yaml": MATRIX_POLICY, "m.md": MATRIX})
    _commit_as_link_holding(repo, "m.md", MATRIX)
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    _blob_mode(doc, "m.md")


def test_a_matrix_deleted_in_the_range_is_a_finding_not_a_missing_input(repo, cli):
    repo.commit("seed", {"redfirst.yaml": MATRIX_POLICY, "m.md": MATRIX})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("mv", "m.md", "matrix.md")
    repo.commit("renamed")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "matrix-removed")
    assert f["file"] == "m.md"


def test_a_cited_file_turned_into_a_link_is_a_finding_not_its_link_text(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ANCHOR_POLICY, "src/file.c": "int a;\n", "other/file.c": "int a;\n",
                         "notes/n.md": "intro\n`src/file.c:1`\n"})
    repo.git("rm", "-q", "src/file.c")
    (repo.path / "src").mkdir(exist_ok=True)
    os.symlink("../other/file.c", repo.path / "src/file.c")
    repo.commit("link")
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    f = _blob_mode(doc, "notes/n.md")
    assert f["line"] == 2 and "src/file.c is a symbolic link" in f["message"]


def test_a_file_cited_inside_a_submodule_is_a_blob_mode_finding(repo, cli, new_repo):
    repo.commit("seed", {"redfirst.yaml": ANCHOR_POLICY, "src/a.c": "int a;\n",
                         "notes/n.md": "`src/a.c:1` and `src/vendor/x.c:1`\n"})
    _submodule(new_repo, repo, "src/vendor")
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    f = _blob_mode(doc, "notes/n.md")
    assert "src/vendor/x.c lies under src/vendor, which is a submodule" in f["message"]


def test_a_policy_file_that_is_a_link_is_a_config_error_not_a_policy(repo, cli):
    repo.commit("seed", {"config/policy.yaml": SPEC_POLICY, "specs/a.md": SPEC})
    os.symlink("config/policy.yaml", repo.path / "redfirst.yaml")
    repo.commit("policy as a link")
    rc, out, err = cli("run", "--root", str(repo.path))
    assert rc == 2, out + err
    assert "redfirst.yaml" in err and "symbolic link" in err


def test_a_capped_record_stored_as_a_link_is_a_finding(repo, cli):
    policy = "checkers:\n  caps:\n    - {paths: [\"*.md\"], paragraph_chars: 40}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "a.md": "short\n"})
    _commit_as_link_holding(repo, "b.md", "short\n")
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    _blob_mode(doc, "b.md")


def test_a_ratcheted_source_behind_a_link_is_not_measured_as_its_link_text(repo, cli):
    policy = ("checkers:\n  ratchets:\n    - {baseline: base.json, paths: [\"src/**\"], "
              "buckets: {kcuda: \"\\\\bkCUDA\\\\b\"}}\n")
    repo.commit("seed", {"redfirst.yaml": policy, "base.json": '{"buckets": {"kcuda": 1}}\n',
                         "src/a.cc": "kCUDA;\n", "vendor/a.cc": "kCUDA; kCUDA;\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "src/a.cc")
    (repo.path / "src").mkdir(exist_ok=True)
    os.symlink("../vendor/a.cc", repo.path / "src/a.cc")  # the debt moves out of sight behind a link
    repo.commit("link", {"base.json": '{"buckets": {"kcuda": 0}}\n', "src/b.cc": "int b;\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 3, doc
    (item,) = doc["items"]
    assert item["verdict"] == "NO_DECISION" and "src/a.cc is a symbolic link" in item["reason"]


def test_a_code_file_behind_a_link_leaves_env_documented_undecided(repo, cli):
    policy = ("checkers:\n  env_documented:\n    code: [\"src/**\"]\n    docs: [\"docs/*.md\"]\n"
              "    names: \"^VT_[A-Z0-9_]+$\"\n")
    repo.commit("seed", {"redfirst.yaml": policy, "src/a.c": 'getenv("VT_A");\n', "docs/env.md": "VT_A\n",
                         "vendor/b.c": 'getenv("VT_HIDDEN");\n'})
    os.symlink("../vendor/b.c", repo.path / "src/b.c")
    repo.commit("link")
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 3, doc
    assert "src/b.c is a symbolic link" in doc["items"][0]["reason"]


def test_a_required_doc_replaced_by_a_link_was_not_updated(repo, cli):
    policy = "checkers:\n  doc_checkpoint:\n    - {when: [\"include/**\"], require: [docs/USAGE.md]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "include/a.h": "int a;\n", "docs/USAGE.md": "use a\n",
                         "other.md": "use a and b\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "docs/USAGE.md")
    (repo.path / "docs").mkdir(exist_ok=True)
    os.symlink("../other.md", repo.path / "docs/USAGE.md")
    repo.commit("api, and the doc as a link", {"include/a.h": "int a;\nint b;\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "doc-checkpoint")
    assert f["file"] == "docs/USAGE.md"


def test_a_cited_file_renamed_in_the_range_is_a_finding_naming_it(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ANCHOR_POLICY, "src/file.c": "int a;\nint b;\n",
                         "notes/n.md": "`src/file.c:2`\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("mv", "src/file.c", "src/moved.c")
    repo.commit("rename")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "anchor-file")
    assert f["file"] == "notes/n.md" and "src/file.c" in f["message"]


def test_a_spec_whose_name_holds_a_newline_is_read_as_itself(repo, cli):
    # cat-file --batch reads one request a line: a path with a newline, asked for by `rev:path`,
    # split into two requests and shifted every later answer onto the wrong file.
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a\n.md": SPEC.replace("`make test`", "TBD"),
                         "specs/b.md": SPEC})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    assert [(f["file"], f["rule"]) for f in _findings(doc)] == [("specs/a\n.md", "spec-content")]


def test_a_mode_change_alone_does_not_update_a_required_doc(repo, cli):
    """`git diff --name-only` lists a file whose mode alone changed (100644 -> 100755); its text is
    the same, so the doc the checkpoint requires was not updated."""
    policy = "checkers:\n  doc_checkpoint:\n    - {when: [ledger.md], require: [README.md]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "ledger.md": "a\n", "README.md": "r\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("ledger", {"ledger.md": "a\nb\n"})
    repo.git("update-index", "--chmod=+x", "README.md")
    repo.git("commit", "-q", "-m", "README executable")
    assert "mode change 100644 => 100755 README.md" in repo.git("diff", "--summary", "main", "HEAD")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = _findings(doc, "doc-checkpoint")
    assert finding["file"] == "README.md", finding


def test_a_ratchet_folder_turned_into_a_link_is_not_counted_through(repo, cli):
    """`src/vllm` replaced by a link to a folder outside the ratchet's globs: the build still reads
    `src/vllm/...`, the counted occurrences vanish, and a lowered baseline would read as progress."""
    policy = ("checkers:\n  ratchets:\n    - baseline: base.json\n      paths: [\"src/vllm/**\", \"include/**\"]\n"
              "      buckets: {kcuda: '\\bkCUDA\\b'}\n")
    repo.commit("seed", {"redfirst.yaml": policy, "base.json": '{"buckets": {"kcuda": 2}}\n',
                         "src/vllm/a.cc": "kCUDA;\n", "include/b.h": "kCUDA;\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("mv", "src/vllm", "vendor")
    os.symlink("../vendor", repo.path / "src" / "vllm")
    repo.commit("src/vllm is a link now", {"vendor/a.cc": "kCUDA; kCUDA; kCUDA;\n",
                                           "base.json": '{"buckets": {"kcuda": 1}}\n'})
    assert repo.git("ls-tree", "HEAD", "src/vllm").split()[0] == "120000"
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc != 0, doc
    (item,) = doc["items"]
    assert item["verdict"] != "GREEN" and "src/vllm" in json.dumps(item), item


LONG = "word " * 30 + "\n"
FOLDER_LINK_CASES = {
    "caps": ("checkers:\n  caps:\n    - {paths: [\"notes/*.md\", \"rec/*.md\"], paragraph_chars: 100}\n",
             {"notes/a.md": "short\n", "rec/r.md": "short\n"}, {"elsewhere/r.md": LONG}),
    "symbol_anchors": ("checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\", \"rec/*.md\"], roots: [src/]}\n",
                       {"notes/a.md": "`src/x.c:1`\n", "rec/r.md": "`src/x.c:1`\n", "src/x.c": "int x;\n"},
                       {"elsewhere/r.md": "`src/x.c:99`\n"}),
    "env_documented": ("checkers:\n  env_documented: {code: [\"src/**/*.c\"], docs: [\"docs/**\"], names: '^VT_[A-Z0-9_]+$'}\n",
                       {"src/a.c": 'getenv("VT_A");\n', "src/rec/b.c": 'getenv("VT_A");\n', "docs/env.md": "VT_A\n"},
                       {"elsewhere/b.c": 'getenv("VT_A"); getenv("VT_NEW");\n'}),
}


@pytest.mark.parametrize("checker", sorted(FOLDER_LINK_CASES))
def test_a_covered_folder_turned_into_a_link_is_never_left_out(repo, cli, checker):
    """A folder the checker covers becomes a link to a folder it does not: the files keep their
    paths for every reader and build, so what lies behind the link is judged as a blob mode."""
    policy, seed, behind = FOLDER_LINK_CASES[checker]
    repo.commit("seed", {"redfirst.yaml": policy, **seed})
    folder = "src/rec" if checker == "env_documented" else "rec"
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "-r", folder)
    repo.write(next(iter(behind)), next(iter(behind.values())))
    depth = folder.count("/")
    os.symlink("../" * depth + "elsewhere", repo.path / folder)
    repo.commit(f"{folder} is a link now")
    assert repo.git("ls-tree", "HEAD", folder).split()[0] == "120000"
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc != 0, doc
    (item,) = doc["items"]
    assert item["verdict"] != "GREEN" and f"lies under {folder}" in json.dumps(item), item


CITING_POLICY = ("checkers:\n  matrices:\n    states: [READY, DONE]\n    obligations:\n"
                 "      - {rule: done-anchor, states: [DONE], column: evidence, anchor: {prefixes: [tests/]}}\n"
                 "      - {rule: done-line, states: [DONE], column: owner, link_line: \"^tests/\"}\n"
                 "      - {rule: ready-spec, states: [READY], column: spec, spec_link: \"^specs/\"}\n"
                 "    files:\n      - {path: m.md, id_pattern: \"ENG-[A-Z]+\"}\n")
CITING = ("| ID | State | Owner | Spike/spec | Tests/evidence |\n|---|---|---|---|---|\n"
          "| `ENG-A` | `DONE` | [t](tests/l.py#L2) | - | tests/t.py:2 |\n"
          "| `ENG-B` | `READY` | x | [s](specs/b.md) | - |\n")


@pytest.mark.parametrize("cited", ["tests/t.py", "tests/l.py", "specs/b.md"])
@pytest.mark.parametrize("how", ["link", "deleted"])
def test_a_file_a_matrix_row_cites_turned_into_a_link_or_deleted_is_a_finding_naming_it(repo, cli, cited, how):
    # A line anchor, a #L link or a spec link into a file the range turned into a link or deleted:
    # a finding with the path, never a missing input (NO_DECISION) as for a snapshot without it.
    repo.commit("seed", {"redfirst.yaml": CITING_POLICY, "m.md": CITING, "tests/t.py": "a\nb\n",
                         "tests/l.py": "a\nb\n", "specs/b.md": "# B\n\nENG-B\n"})
    repo.git("checkout", "-q", "-b", "feature")
    if how == "link":
        _commit_as_link_holding(repo, cited, (repo.path / cited).read_text())
    else:
        repo.git("rm", "-q", cited)
        repo.commit(f"delete {cited}")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = _findings(doc)
    assert finding["file"] == "m.md" and cited in finding["message"], finding
    if how == "link":
        assert finding["rule"] == "blob-mode" and "symbolic link" in finding["message"]
    else:
        assert "deleted or renamed" in finding["message"]


def test_a_cited_root_deleted_whole_in_the_range_is_a_finding_per_citation(repo, cli):
    # A root absent from a snapshot leaves its citations undecided; a root the merge base holds and
    # the range deletes whole took every symbol the records cite: each citation is a finding.
    repo.commit("seed", {"redfirst.yaml": ANCHOR_POLICY, "src/a.c": "int alpha;\n",
                         "notes/n.md": "`src/a.c::alpha` and `src/a.c:1`\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "-r", "src")
    repo.commit("drop src")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert [(f["file"], f["line"], f["rule"]) for f in _findings(doc)] == [("notes/n.md", 1, "anchor-file")] * 2


def _commit_tree_listing_twice(repo, path: str, first: str, second: str) -> None:
    """Commit a tree that lists `path` twice (`git mktree` writes it; git diff shows each entry):
    the first entry holds `first`, the second `second`."""
    blobs = [repo.git("hash-object", "-w", "--stdin", input=text).strip() for text in (first, second)]
    rest = [line for line in repo.git("ls-tree", "HEAD").splitlines() if not line.endswith(f"\t{path}")]
    listing = "".join(f"{line}\n" for line in rest) + "".join(f"100644 blob {b}\t{path}\n" for b in blobs)
    tree = repo.git("mktree", input=listing).strip()
    commit = repo.git("commit-tree", tree, "-p", "HEAD", "-m", f"{path} twice").strip()
    repo.git("reset", "-q", "--hard", commit)
    assert [line.split("\t")[1] for line in repo.git("ls-tree", "HEAD").splitlines()].count(path) == 2


@pytest.mark.parametrize("first_edited", [True, False], ids=["first-entry-edited", "second-entry-edited"])
def test_an_append_only_file_listed_twice_in_the_head_tree_is_a_finding(repo, cli, first_edited):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    edited = INDEX.replace("first", "EDITED")
    _commit_tree_listing_twice(repo, "index.md", *((edited, INDEX) if first_edited else (INDEX, edited)))
    assert "+| 1 | EDITED |" in repo.git("diff", "main", "HEAD"), "git diff shows the edited row"
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert "more than once" in _blob_mode(doc, "index.md")["message"]


def test_a_spec_listed_twice_in_the_tree_is_a_finding_not_one_of_its_texts(repo, cli):
    policy = "checkers:\n  specs:\n    - {glob: \"spec-*.md\", sections: [Scope, Gates]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "spec-a.md": SPEC})
    _commit_tree_listing_twice(repo, "spec-a.md", "# S\n\nno sections\n", SPEC)
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    assert "more than once" in _blob_mode(doc, "spec-a.md")["message"]
