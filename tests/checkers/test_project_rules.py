"""Rules real projects state (issue 14): per-commit and first-parent doc checkpoints, root-anchored
globs, a message-must-contain rule, a project's own script, a ratchet over stripped C source with an
exact allowlist, row counts the repository states, columns by meaning and line anchors."""

from __future__ import annotations

import json
import textwrap

import pytest


def _yaml(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def _findings(doc: dict, rule: str | None = None) -> list[dict]:
    return [f for i in doc["items"] for f in i["findings"] if rule is None or f["rule"] == rule]


def _verdicts(doc: dict) -> dict[str, str]:
    return {i["id"].split(":", 1)[0]: i["verdict"] for i in doc["items"]}


DOC_POLICY = _yaml("""
    checkers:
      doc_checkpoint:
        - {when: ["/src/**"], require: ["/README.md"], per_commit: true}
    """)


def test_per_commit_checkpoint_names_the_commit_that_skipped_the_doc(repo, cli):
    repo.commit("seed", {"redfirst.yaml": DOC_POLICY, "README.md": "v0\n", "src/a.c": "0\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("code and doc", {"src/a.c": "1\n", "README.md": "v1\n"})
    lazy = repo.commit("code only", {"src/a.c": "2\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (finding,) = _findings(doc, "doc-checkpoint")
    assert finding["file"] == f"commit {lazy[:12]}" and "README.md" in finding["message"]
    squashed = DOC_POLICY.replace(", per_commit: true", "")
    repo.git("checkout", "-q", "main")
    repo.commit("squashed policy", {"redfirst.yaml": squashed})
    repo.git("checkout", "-q", "feature")
    repo.git("rebase", "-q", "main")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, doc  # the squashed shape did update README.md


@pytest.mark.parametrize("decoy", ["README.md\x01x", "\nREADME.md", "\n\nREADME.md"])
def test_a_file_named_like_the_doc_does_not_update_it_in_a_per_commit_checkpoint(repo, cli, decoy):
    # git log -z prints paths NUL-separated, but a path may hold \x01 or start with a newline:
    # neither a path's \x01 nor its leading LF may be read as the separator of git's record.
    policy = DOC_POLICY.replace("/src/**", "/CMakeLists.txt")
    repo.commit("seed", {"redfirst.yaml": policy, "README.md": "v0\n", "CMakeLists.txt": "project(a)\n"})
    repo.git("checkout", "-q", "-b", "feature")
    lazy = repo.commit("build only", {"CMakeLists.txt": "project(b)\n", decoy: "not the doc\n"})
    assert repo.git("diff", "--name-only", "-z", "main", "feature").split("\0").count("README.md") == 0
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = _findings(doc, "doc-checkpoint")
    assert finding["file"] == f"commit {lazy[:12]}"
    assert doc["items"][0]["counts"]["commits"] == 1


def test_a_root_commit_merged_in_is_judged_whatever_the_user_s_log_and_diff_config(repo, cli, new_repo):
    # An unrelated history merged in brings its root commit into the range. git log leaves a root
    # commit's diff out under log.showRoot=false, and a submodule bump under diff.ignoreSubmodules:
    # a user's config must not decide which changes the checkpoint sees.
    policy = _yaml("""
        checkers:
          doc_checkpoint:
            - {when: [CMakeLists.txt, "vendor/**"], require: [README.md], per_commit: true}
        """)
    repo.commit("seed", {"redfirst.yaml": policy, "README.md": "v0\n", "CMakeLists.txt": "project(a)\n"})
    sub = new_repo("sub")
    sub.commit("one", {"x.c": "1\n"})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "vendor/lib")
    repo.commit("vendor lib", {"README.md": "v1\n"})
    other = new_repo("other")
    root = other.commit("other root", {"CMakeLists.txt": "project(b)\n"})
    repo.git("fetch", "-q", str(other.path), "main:other")
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("merge", "-q", "--allow-unrelated-histories", "-X", "theirs", "--no-commit", "other")
    repo.commit("merge other, with the doc", {"README.md": "v2\n"})
    sub.commit("two", {"x.c": "2\n"})
    repo.git("-C", "vendor/lib", "pull", "-q", str(sub.path), "main")
    bump = repo.commit("bump vendor/lib alone")
    repo.git("config", "log.showRoot", "false")
    repo.git("config", "diff.ignoreSubmodules", "all")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert {f["file"] for f in _findings(doc, "doc-checkpoint")} == {f"commit {root[:12]}", f"commit {bump[:12]}"}


def test_a_submodule_bump_triggers_the_squashed_checkpoint_whatever_diff_ignore_submodules_says(repo, cli, new_repo):
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  doc_checkpoint:\n    - {when: [\"vendor/**\"], require: [README.md]}\n",
                         "README.md": "v0\n"})
    sub = new_repo("sub")
    sub.commit("one", {"x.c": "1\n"})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "vendor/lib")
    repo.commit("vendor lib", {"README.md": "v1\n"})
    repo.git("checkout", "-q", "-b", "feature")
    sub.commit("two", {"x.c": "2\n"})
    repo.git("-C", "vendor/lib", "pull", "-q", str(sub.path), "main")
    repo.commit("bump vendor/lib alone")
    repo.git("config", "diff.ignoreSubmodules", "all")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = _findings(doc, "doc-checkpoint")
    assert "vendor/lib changed but README.md did not" in finding["message"]


def test_root_anchored_glob_is_the_root_file_only(repo, cli):
    repo.commit("seed", {"redfirst.yaml": DOC_POLICY, "README.md": "v0\n", "docs/README.md": "d0\n", "src/a.c": "0\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("code and a nested readme", {"src/a.c": "1\n", "docs/README.md": "d1\n"})
    repo.commit("code in a nested src", {"lib/src/b.c": "1\n", "README.md": "v1\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (finding,) = _findings(doc, "doc-checkpoint")  # lib/src/b.c is not /src/**: that commit triggers nothing
    assert "src/a.c" in finding["message"]


def _merge_with_branch_commit(repo, branch_message: str, policy: str, files: dict[str, str] | None = None) -> None:
    repo.commit("seed\n\nFOLLOWING_AGENTS_PROTOCOL\n", {"redfirst.yaml": policy, "README.md": "v0\n", "src/a.c": "0\n"})
    repo.git("checkout", "-q", "-b", "line")
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit(branch_message, files or {"src/a.c": "1\n"})
    repo.git("checkout", "-q", "line")
    repo.git("merge", "-q", "--no-ff", "-m", "merge topic\n\nFOLLOWING_AGENTS_PROTOCOL\n", "topic")
    repo.commit("line work\n\nFOLLOWING_AGENTS_PROTOCOL\n", {"README.md": "v1\n"})


TAG_POLICY = _yaml("""
    checkers:
      trailers: {message_require: ["FOLLOWING_AGENTS_PROTOCOL"], first_parent: true}
    """)


def test_protocol_tag_is_required_on_first_parent_commits_only(repo, cli):
    _merge_with_branch_commit(repo, "topic work without the tag", TAG_POLICY)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--head", "line")
    assert rc == 0, doc  # the merged-in commit is the merge's: the merge stands for it, and is tagged
    assert doc["items"][0]["counts"]["checked"] == 2     # the merge and the line's own commit
    repo.commit("line commit without it", {"x.txt": "x\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--head", "line")
    assert rc == 1
    (finding,) = _findings(doc, "message-required")
    assert "FOLLOWING_AGENTS_PROTOCOL" in finding["message"]
    everywhere = TAG_POLICY.replace(", first_parent: true", "")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--head", "line",
                       "--config", _write(repo, "all.yaml", everywhere))
    assert rc == 1 and len(_findings(doc, "message-required")) == 2


def test_first_parent_checkpoint_leaves_merged_in_commits_to_the_merge(repo, cli):
    policy = DOC_POLICY.replace("per_commit: true", "per_commit: true, first_parent: true")
    _merge_with_branch_commit(repo, "topic code, no doc", policy)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--head", "line")
    # the merge brings src/a.c to the line without README.md: it is the commit judged, not the topic's
    assert rc == 1
    (finding,) = _findings(doc, "doc-checkpoint")
    assert finding["file"] == f"commit {repo.git('rev-parse', 'line~1').strip()[:12]}"


def _write(repo, name: str, text: str) -> str:
    path = repo.path.parent / name
    path.write_text(text, encoding="utf-8")
    return str(path)


SCRIPT = """import sys
bad = open("state.txt").read().strip()
if bad != "ok":
    print("ERROR: records/a.md:7: state is " + bad, file=sys.stderr)
    print("ERROR: something without a place", file=sys.stderr)
    sys.exit(1)
print("OK", sys.argv[1:])
"""
SCRIPT_POLICY = _yaml("""
    checkers:
      script:
        - {path: tools/check.py, args: ["--head", "{head}"]}
    """)


def test_script_checker_grades_exit_status_and_error_lines(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SCRIPT_POLICY, "tools/check.py": SCRIPT, "state.txt": "ok\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0, doc
    repo.commit("break", {"state.txt": "stale\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert {(f["file"], f["line"]) for f in _findings(doc, "script")} == {("records/a.md", 7), ("tools/check.py", 1)}
    repo.write("state.txt", "ok\n")  # uncommitted: the script would judge the working tree, not the commit
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 3 and doc["items"][0]["verdict"] == "NO_DECISION"
    assert "uncommitted" in doc["items"][0]["reason"]


def test_script_checker_without_a_failure_line_still_fails_on_its_exit(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SCRIPT_POLICY, "tools/check.py": "import sys\nsys.exit(4)\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    (finding,) = _findings(doc, "script")
    assert "exit status 4" in finding["message"]


def test_a_check_script_rewritten_in_the_range_does_not_judge_the_range(repo, cli):
    # The script is the rule: read from the merge base like redfirst.yaml. The head's own rewrite of
    # it (here: to always pass) judging the head's edit would weaken the rule and break it in one go.
    strict = "import sys\nsys.exit(0 if open('state.txt').read() == 'ok\\n' else 1)\n"
    repo.commit("seed", {"redfirst.yaml": SCRIPT_POLICY, "tools/check.py": strict, "state.txt": "ok\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("break the state and the rule", {"state.txt": "stale\n", "tools/check.py": "pass\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 3, doc
    (item,) = doc["items"]
    assert item["verdict"] == "NO_DECISION" and "tools/check.py changed" in item["reason"]
    # A policy taken from the head on purpose runs the head's script, and says so.
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--policy-from", "head")
    assert rc == 0 and doc["policy"]["from_merge_base"] is False
    repo.commit("the rule back", {"tools/check.py": strict})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "script"), doc


RATCHET_POLICY = _yaml("""
    checkers:
      ratchets:
        - baseline: base.json
          paths: ["/src/**/*.cpp"]
          strip: c
          buckets:
            kcuda: "\\\\bkCUDA\\\\b"
            inc: {pattern: "^#include <cuda", raw: true, outside: "\\\\bVT_CUDA\\\\b"}
          exempt: "DSR-ALLOW"
          exempt_next_line: true
          allowlist: {src/platform.cpp: {kcuda: 1}}
    """)
CODE = """// kCUDA in a comment is prose
const char* s = "kCUDA in a string";
/* a block
   kCUDA comment */
#ifdef VT_CUDA
#include <cuda_runtime.h>
#else
#include <cuda_fp16.h>
#endif
// DSR-ALLOW(ROW-1): the marker covers the line below
bool a = dev == kCUDA;
bool b = dev == kCUDA;
"""


def test_ratchet_counts_code_not_comments_or_strings_and_holds_the_allowlist_exact(repo, cli):
    baseline = json.dumps({"buckets": {"kcuda": 1, "inc": 1}})
    repo.commit("seed", {"redfirst.yaml": RATCHET_POLICY, "base.json": baseline, "src/a.cpp": CODE,
                         "src/platform.cpp": "auto p = kCUDA;\n", "src/other/x.h": "kCUDA kCUDA\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0, doc
    counts = doc["items"][0]["counts"]
    assert counts["kcuda"] == 1 and counts["inc"] == 1  # line 12 and the #else arm's include
    repo.commit("a second platform reference", {"src/platform.cpp": "auto p = kCUDA;\nauto q = kCUDA;\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    rules = {f["rule"] for f in _findings(doc)}
    assert rules == {"ratchet-allowlist", "ratchet-regression"}


STATED_POLICY = _yaml("""
    checkers:
      matrices:
        states: [SPIKE, READY, DONE]
        columns: {id: ID, state: [state], spec: [spike], evidence: [tests evidence, evidence], owner: [owner]}
        files:
          - path: m.md
            id_pattern: "R-[A-Z0-9]+"
            other_rows: skip
            rows: {from: tools/check.py, pattern: "^ROWS = (\\\\d+)"}
        obligations:
          - {rule: spec-link, states: [READY, DONE], column: spec, spec_link: "(^|/)specs/[^/]+\\\\.md$",
             names_row: true, sections: {Scope: [scope], Gates: [gates]}}
          - {rule: test-anchor, states: [DONE], column: evidence, anchor: {prefixes: [tests/]}}
    """)
MATRIX = """# M

| ID | Row state | Spike/spec | Our tests/evidence | Owner (claim) |
|---|---|---|---|---|
| `R-1` | `READY` | [s](specs/a.md), [t](specs/b.md) | - | x |
| `R-2` | `DONE` | [s](specs/a.md) | [t](tests/t.cpp#L2) and tests/t.cpp:1 | x |
| a continuation line of prose | | | | |
| `R-3` | `SPIKE` | [u](specs/unfinished.md) | - | x |
"""
SPEC_A = "# A\n\nRows `R-1`, `R-2`.\n\n## Scope\n\nThe rows.\n\n### Gates\n\n| Gate | Command |\n|---|---|\n| unit | `ctest` |\n"


def _matrix_repo(repo, **override: str) -> None:
    files = {"redfirst.yaml": STATED_POLICY, "tools/check.py": "ROWS = 3\n", "m.md": MATRIX, "specs/a.md": SPEC_A,
             "specs/b.md": "# B\n\nnothing about the row\n", "specs/unfinished.md": "# U\n\n## Scope\n\nTBD\n",
             "tests/t.cpp": "int a;\nint b;\n"}
    files.update(override)
    repo.commit("seed", files)


def test_matrix_rules_as_the_project_states_them_are_green_on_a_good_record(repo, cli):
    _matrix_repo(repo)
    rc, doc = cli.json("run", "--root", str(repo.path))
    # a spec is judged only when a READY-or-later row links it; one linked spec naming the row is enough;
    # the stated count (3) is read from the repository; headers match by meaning; prose rows are skipped
    assert rc == 0, doc
    assert doc["items"][0]["counts"]["rows"] == 3


def test_stated_row_count_and_line_anchor_past_the_end_are_red(repo, cli):
    _matrix_repo(repo, **{"tools/check.py": "ROWS = 4\n",
                          "m.md": MATRIX.replace("[t](tests/t.cpp#L2) and tests/t.cpp:1", "[t](tests/t.cpp#L99)")})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    got = {f["rule"]: f for f in _findings(doc)}
    assert set(got) == {"row-count", "test-anchor"}
    assert "tools/check.py" in got["row-count"]["message"] and got["test-anchor"]["line"] == 6


def test_linked_spec_with_a_placeholder_section_is_red_for_the_ready_row(repo, cli):
    _matrix_repo(repo, **{"specs/a.md": SPEC_A.replace("| unit | `ctest` |", "| unit | TBD |")})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    sections = _findings(doc, "spec-section")
    assert {f["file"] for f in sections} == {"specs/a.md"} and all("`Gates`" in f["message"] for f in sections)
    assert len(sections) == 2  # one per row that relies on the spec (R-1 READY, R-2 DONE)


@pytest.mark.parametrize("emptied", ["\u200b", "\u034f\u2060", "\ufeff", "| unit | \u200b |"])
def test_a_linked_spec_section_holding_only_invisible_characters_is_not_filled(repo, cli, emptied):
    # Read line by line as the project's own spec checker reads it, a line still shows what a reader
    # sees: one of zero-width or other default-ignorable characters alone is an empty line.
    _matrix_repo(repo, **{"specs/a.md": SPEC_A.replace("| unit | `ctest` |", emptied)})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    sections = _findings(doc, "spec-section")
    assert {f["file"] for f in sections} == {"specs/a.md"} and all("`Gates`" in f["message"] for f in sections)


ADOPT = "checkers:\n  doc_checkpoint:\n    - {when: [\"/src/**\"], require: [\"/README.md\"]}\n"


def test_config_file_runs_a_policy_the_merge_base_lacks_and_every_format_says_so(repo, cli):
    repo.commit("seed", {"README.md": "v0\n", "src/a.c": "0\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("code only", {"src/a.c": "1\n"})
    rc, _out, _err = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 3  # no policy at the merge base: nothing selected
    config = _write(repo, "adopt.yaml", ADOPT)
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "main", "--config", config)
    assert rc == 1 and out.startswith("NOTE: policy not from the merge base") and "adopt.yaml" in out
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--config", config)
    assert rc == 1 and doc["policy"]["from_merge_base"] is False
    assert "policy not from the merge base" in doc["policy"]["note"]
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main", "--config", config, "--format", "sarif")
    sarif = json.loads(out)
    notes = sarif["runs"][0]["invocations"][0]["toolConfigurationNotifications"]
    assert "policy not from the merge base" in notes[0]["message"]["text"]
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main", "--config", config, "--format", "github")
    assert out.splitlines()[0].startswith("::warning") and "policy not from the merge base" in out.splitlines()[0]


def test_policy_from_head_judges_the_change_that_adds_redfirst_yaml(repo, cli):
    repo.commit("seed", {"README.md": "v0\n", "src/a.c": "0\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("adopt redfirst, and code without the doc", {"redfirst.yaml": ADOPT, "src/a.c": "1\n"})
    rc, _doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 3
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--policy-from", "head")
    assert rc == 1 and "policy not from the merge base" in doc["policy"]["note"]
    assert "redfirst.yaml@" in doc["policy"]["note"]


def test_config_file_with_a_bad_policy_is_an_error_with_its_line(repo, cli):
    repo.commit("seed", {"README.md": "v0\n"})
    config = _write(repo, "bad.yaml", "checkers:\n  doc_checkpoint:\n    - {when: 3}\n")
    rc, _out, err = cli("run", "--root", str(repo.path), "--config", config)
    assert rc == 2 and "bad.yaml:3" in err
    rc, _out, err = cli("run", "--root", str(repo.path), "--config", config + ".missing")
    assert rc == 2 and "bad.yaml.missing" in err and "cannot read" in err


def test_preset_checker_whose_inputs_do_not_exist_is_off(repo, cli):
    repo.commit("seed\n\nFOLLOWING_AGENTS_PROTOCOL\n", {"README.md": "v0\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("work\n\nFOLLOWING_AGENTS_PROTOCOL\n", {"notes.txt": "n\n"})
    config = _write(repo, "preset.yaml", "checkers:\n  preset: agents-record\n")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--config", config)
    # no matrices, no baseline, no scripts, no docs/BENCHMARKS.md: only the commit rule is this project's
    assert set(_verdicts(doc)) == {"trailers"} and rc == 0, doc
    explicit = config.replace("preset.yaml", "explicit.yaml")
    with open(explicit, "w", encoding="utf-8") as fh:
        fh.write("checkers:\n  preset: agents-record\n  script:\n    - {path: scripts/check-x.py}\n")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--config", explicit)
    assert _verdicts(doc)["script"] == "NO_DECISION" and rc == 3  # asked for by name: never silently off

