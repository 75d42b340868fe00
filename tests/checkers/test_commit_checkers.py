"""trailers and commit_style: synthetic ranges, the commit-msg hook, and 1121 real messages replayed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

POLICY = """checkers:
  trailers:
    require: {Assisted-by: "^[A-Za-z0-9][^:]*:[^ ]+ \\\\[.+\\\\]$"}
    forbid_in: {Signed-off-by: "(?i)\\\\b(claude|gpt|copilot|bot)\\\\b", Co-authored-by: "(?i)\\\\bbot\\\\b"}
    forbid: [Change-Id]
    when:
      - {message: "^PROTOCOL$", require: {Following-Protocol: "^true$"}}
  commit_style:
    subject: "^(feat|fix|docs)(\\\\([a-z]+\\\\))?: .*[^.]$"
    body: required
"""
GOOD = "feat(core): add the thing\n\nWhy it is needed.\n\nAssisted-by: Tool:model-1 [Tool]\n"


def _range(repo, messages: list[str]) -> None:
    repo.commit("docs: seed\n\nseed body\n\nAssisted-by: Tool:m [T]\n", {"redfirst.yaml": POLICY})
    repo.git("checkout", "-q", "-b", "feature")
    for i, message in enumerate(messages):
        repo.commit(message, {f"f{i}.txt": str(i)})


def _by_rule(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for item in doc["items"]:
        for f in item["findings"]:
            out.setdefault(f["rule"], []).append(f)
    return out


def test_a_good_range_is_green(repo, cli):
    _range(repo, [GOOD])
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out
    assert out.splitlines()[-1] == "All 2 checks green"


def test_missing_required_trailer_is_red(repo, cli):
    _range(repo, [GOOD, "feat: no trailer\n\nbody text\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (f,) = _by_rule(doc)["trailer-required"]
    assert f["file"].startswith("commit ") and "Assisted-by" in f["message"]


def test_malformed_required_trailer_is_red(repo, cli):
    _range(repo, ["feat: x\n\nbody\n\nAssisted-by: just a name\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and len(_by_rule(doc)["trailer-format"]) == 1


def test_control_characters_in_a_message_neither_forge_trailers_nor_break_the_run(repo, cli):
    # A unit separator in the body once shifted the fields: the body's `Key: value` lines were read as
    # trailers; a record separator split the commit in two and turned the run into an ERROR.
    forged = "feat: forged\n\nbody \x1f\nAssisted-by: Tool:m [T]\n\nprose ends it.\n"
    split = "feat: split\n\nbody \x1e here\n\nAssisted-by: Tool:m [T]\n"
    _range(repo, [forged, split])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "trailers")
    assert rc == 1
    (f,) = _by_rule(doc)["trailer-required"]
    assert doc["items"][0]["counts"]["checked"] == 2


def test_trailer_text_outside_the_last_paragraph_is_not_a_trailer(repo, cli):
    # git's rules: a `Key: value` line in the middle of the body is prose, not a trailer.
    _range(repo, ["feat: x\n\nAssisted-by: Tool:m [T]\n\nthe body goes on here after it.\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and len(_by_rule(doc)["trailer-required"]) == 1


def test_forbidden_identity_in_signed_off_by_and_co_authored_by(repo, cli):
    _range(repo, [GOOD.rstrip("\n") + "\nSigned-off-by: Claude <c@example.invalid>\n",
                  GOOD.rstrip("\n") + "\nCo-authored-by: helper-bot <b@example.invalid>\n",
                  GOOD.rstrip("\n") + "\nSigned-off-by: A Person <p@example.invalid>\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    assert len(_by_rule(doc)["trailer-identity"]) == 2


def test_forbidden_trailer_key(repo, cli):
    _range(repo, [GOOD.rstrip("\n") + "\nChange-Id: I123\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and len(_by_rule(doc)["trailer-forbidden"]) == 1


def test_conditional_trailer_required_only_when_the_message_says_so(repo, cli):
    _range(repo, ["feat: a\n\nbody\n\nPROTOCOL\n\nAssisted-by: Tool:m [T]\n",
                  "feat: b\n\nbody\n\nPROTOCOL\n\nAssisted-by: Tool:m [T]\nFollowing-Protocol: true\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (f,) = _by_rule(doc)["trailer-required"]
    assert "Following-Protocol" in f["message"]


def test_style_subject_period_and_body(repo, cli):
    _range(repo, ["Update things\n\nbody\n\nAssisted-by: Tool:m [T]\n",
                  "fix: trailing period.\n\nbody\n\nAssisted-by: Tool:m [T]\n",
                  "docs: no body\n\nAssisted-by: Tool:m [T]\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    rules = _by_rule(doc)
    assert rc == 1
    assert len(rules["subject-pattern"]) == 2  # the first, and the period one fails the pattern too
    assert len(rules["subject-period"]) == 1
    assert len(rules["body-required"]) == 1


def test_the_subject_is_the_first_paragraph_as_git_reads_it(repo, cli):
    # git's subject (%s) is the whole first paragraph; a second line of it is not a body.
    _range(repo, ["docs: a subject\nthat wraps onto a second line.\n\nAssisted-by: Tool:m [T]\n"])
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "commit_style")
    rules = _by_rule(doc)
    assert rc == 1
    assert len(rules["body-required"]) == 1 and len(rules["subject-period"]) == 1


def test_merge_commits_are_skipped(repo, cli):
    _range(repo, [GOOD])
    repo.git("checkout", "-q", "main")
    repo.commit(GOOD.replace("add the thing", "main work"), {"m.txt": "m"})
    repo.git("checkout", "-q", "feature")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge branch 'main' into feature", "main")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, doc
    trailers = next(i for i in doc["items"] if i["id"] == "trailers")
    assert trailers["counts"]["merges_skipped"] == 1 and trailers["counts"]["checked"] == 1


def test_commit_msg_hook_checks_one_message(repo, cli, tmp_path):
    repo.commit(GOOD, {"redfirst.yaml": POLICY})
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text("Bad subject.\n\n# a comment git strips\n")
    rc, out, _ = cli("commit-msg", str(msg), "--root", str(repo.path))
    assert rc == 1
    assert "subject-period" in out and "trailer-required" in out and "body-required" in out
    msg.write_text(GOOD + "# Please enter the commit message\n")
    rc, out, _ = cli("commit-msg", str(msg), "--root", str(repo.path))
    assert rc == 0, out


def test_commit_msg_of_a_missing_file_is_a_usage_error(repo, cli, tmp_path):
    repo.commit(GOOD, {"redfirst.yaml": POLICY})
    rc, _out, err = cli("commit-msg", str(tmp_path / "absent"), "--root", str(repo.path))
    assert rc == 2 and "absent" in err


def test_commit_msg_in_latin1_is_judged_not_a_crash(repo, cli, tmp_path):
    # i18n.commitEncoding lets a project write messages that are not UTF-8.
    repo.commit(GOOD, {"redfirst.yaml": POLICY})
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_bytes("feat: café\n\nWhy it is needed.\n\nAssisted-by: Tool:model-1 [Tool]\n".encode("latin-1"))
    rc, out, _ = cli("commit-msg", str(msg), "--root", str(repo.path))
    assert rc == 0, out
    msg.write_bytes("feat: café\n\nWhy it is needed.\n\nSigned-off-by: Copilot é\n".encode("latin-1"))
    rc, doc = cli.json("commit-msg", str(msg), "--root", str(repo.path))
    assert rc == 1 and {"trailer-required", "trailer-identity"} <= set(_by_rule(doc))


def _replay(repo, corpus: Path, policy: str) -> str:
    """All commits of the corpus into `repo` through one `git fast-import`, above a base commit
    holding `policy` as redfirst.yaml; returns the base commit."""
    rows = [json.loads(line) for line in (corpus / "commits-d85906ae.jsonl").read_text().splitlines()]
    by_sha = {r["sha"]: r for r in rows}
    order: list[str] = []
    seen: set[str] = set()
    for start in by_sha:  # iterative DFS: parents before children
        stack = [(start, False)]
        while stack:
            sha, done = stack.pop()
            if done:
                order.append(sha)
                continue
            if sha in seen:
                continue
            seen.add(sha)
            stack.append((sha, True))
            stack.extend((p, False) for p in reversed(by_sha[sha]["parents"]) if p in by_sha and p not in seen)
    marks = {sha: i + 2 for i, sha in enumerate(order)}
    yaml = policy.encode()
    out = [b"commit refs/heads/base\nmark :1\ncommitter Replay <r@example.invalid> 1700000000 +0000\ndata 5\nbase\n"
           + f"M 644 inline redfirst.yaml\ndata {len(yaml)}\n".encode() + yaml + b"\n"]
    for sha in order:
        row = by_sha[sha]
        data = row["message"].encode()
        parents = [marks[p] for p in row["parents"] if p in marks] or [1]
        head = f"commit refs/heads/main\nmark :{marks[sha]}\ncommitter Replay <r@example.invalid> 1700000000 +0000\n"
        lines = [head.encode(), f"data {len(data)}\n".encode(), data, b"\n", f"from :{parents[0]}\n".encode()]
        lines += [f"merge :{p}\n".encode() for p in parents[1:]]
        out.append(b"".join(lines))
    tip = marks[rows[0]["sha"]]
    out.append(f"reset refs/heads/main\nfrom :{tip}\n".encode())
    stream = b"".join(out).decode()
    repo.git("fast-import", "--quiet", input=stream)
    return repo.git("rev-parse", "base").strip()


# The trailer and subject rules this replay tallies (the agents-record preset before it was restated
# from vllm.cpp's own CI, which checks only the protocol tag): a parser test at the scale of 1121 messages.
REPLAY_POLICY = """checkers:
  trailers:
    when: [{message: '^FOLLOWING_AGENTS_PROTOCOL$', require: {Assisted-by: '^[A-Za-z0-9][^:]*:\\S+ \\[.+\\]'}}]
    forbid_in:
      Signed-off-by: '(?i)\\b(claude|anthropic|gpt|codex|openai|copilot|gemini|bot)\\b'
      Co-authored-by: '(?i)\\b(claude|anthropic|gpt|codex|openai|copilot|gemini|bot)\\b'
  commit_style: {subject: '^[a-z]+(\\([A-Za-z0-9_./,-]+\\))?!?: \\S', body: required}
"""


def test_1121_real_messages_replayed_are_counted(repo, cli, corpus):
    base = _replay(repo, corpus, REPLAY_POLICY)
    rows = [json.loads(line) for line in (corpus / "commits-d85906ae.jsonl").read_text().splitlines()]
    merges = sum(len(r["parents"]) > 1 for r in rows)
    assert int(repo.git("rev-list", "--count", f"{base}..main").strip()) == len(rows)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", base, "--head", "main",
                       "--only", "trailers", "--only", "commit_style")
    items = {i["id"]: i for i in doc["items"]}
    assert rc == 1
    for key in ("trailers", "commit_style"):
        counts = items[key]["counts"]
        assert counts["commits"] == len(rows) == 1121
        assert counts["merges_skipped"] == merges == 47
        assert counts["checked"] == 1121 - 47
    # Independent tallies from the raw messages (non-merges only).
    plain = [r for r in rows if len(r["parents"]) <= 1]
    bad_subject = [r for r in plain if not re.match(r"^[a-z]+(\([A-Za-z0-9_./,-]+\))?!?: \S", r["message"])]
    agent_coauthor = [r for r in plain if re.search(r"(?im)^Co-Authored-By: .*\b(claude|anthropic)\b", r["message"])]
    style = items["commit_style"]["findings"]
    assert len([f for f in style if f["rule"] == "subject-pattern"]) == len(bad_subject)
    identity = [f for f in items["trailers"]["findings"] if f["rule"] == "trailer-identity"]
    assert len(identity) == len(agent_coauthor)
    fap_unassisted = [r for r in plain if re.search(r"(?m)^FOLLOWING_AGENTS_PROTOCOL$", r["message"])
                      and not re.search(r"(?m)^Assisted-by: ", r["message"].rstrip().split("\n\n")[-1])]
    assert len([f for f in items["trailers"]["findings"] if f["rule"] == "trailer-required"]) == len(fap_unassisted)
    failing = {r["sha"][:12] for r in agent_coauthor + fap_unassisted}
    assert items["trailers"]["counts"]["failing_commits"] == len(failing) == 387
    no_body = [r for r in plain if not _naive_body(r["message"])]
    # The policy's trailer keys are declared to git, so a last paragraph holding the protocol marker
    # and an Assisted-by line is the trailer block, not a body: 300 commits explain nothing else.
    assert len([f for f in style if f["rule"] == "body-required"]) == len(no_body) == 300
    assert len(bad_subject) == 179


def _naive_body(message: str) -> str:
    paragraphs = message.strip().split("\n\n")[1:]
    last = paragraphs[-1].splitlines() if paragraphs else []
    trailer = [ln for ln in last if re.match(r"^[A-Za-z-]+: ", ln)]
    if trailer and all(ln in trailer or ln == "FOLLOWING_AGENTS_PROTOCOL" for ln in last):
        paragraphs = paragraphs[:-1]
    return "\n\n".join(paragraphs).strip()


def test_an_empty_range_is_no_decision_not_green(repo, cli):
    _range(repo, [])
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 3
    assert "nothing to check: 0 commits" in out and "green" not in out.lower()


def test_a_shallow_clone_that_cuts_the_range_is_no_decision(repo, cli, new_repo):
    # The merge base is reachable through one parent of a merge, but the other side's history is cut:
    # `git log base..head` would silently skip the commits behind the cut.
    _range(repo, [GOOD])
    repo.git("checkout", "-q", "-b", "side", "main")
    repo.commit("feat: hidden\n\nno trailer on this one\n", {"s1.txt": "1"})
    cut = repo.commit(GOOD, {"s2.txt": "2"})
    repo.git("checkout", "-q", "feature")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge branch 'side' into feature", "side")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "trailers")
    assert rc == 1 and len(_by_rule(doc)["trailer-required"]) == 1
    clone = new_repo("clone")
    clone.git("fetch", "-q", f"file://{repo.path}", "main:refs/remotes/o/main", "feature:refs/remotes/o/feature")
    clone.git("checkout", "-q", "-b", "feature", "o/feature")
    (clone.path / ".git" / "shallow").write_text(cut + "\n")  # what `fetch --depth` leaves: s2's parents absent
    assert clone.git("rev-parse", "--is-shallow-repository").strip() == "true"
    rc, out, _ = cli("run", "--root", str(clone.path), "--base", "o/main", "--only", "trailers")
    assert rc == 3 and "shallow" in out and cut[:12] in out


def test_log_show_signature_in_the_user_config_does_not_garble_the_range(repo, cli):
    # `log.showSignature` prints verification text before each commit; the range reader turns it off.
    if shutil.which("ssh-keygen") is None:
        pytest.fail("ssh-keygen is required") if os.environ.get("CI") else pytest.skip("ssh-keygen is required")
    _range(repo, [])
    key = repo.path.parent / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, capture_output=True)
    repo.git("-c", "gpg.format=ssh", "-c", f"user.signingkey={key}.pub", "commit", "-q", "-S", "--allow-empty",
             "-m", "feat: signed, no body")
    sha = repo.git("rev-parse", "HEAD").strip()
    repo.git("config", "log.showSignature", "true")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "commit_style")
    assert rc == 1
    assert [f["file"] for f in _by_rule(doc)["body-required"]] == [f"commit {sha[:12]}"]


def _findings(doc: dict, rule: str | None = None) -> list[dict]:
    return [f for i in doc["items"] for f in i["findings"] if rule is None or f["rule"] == rule]


IDENTITY = textwrap.dedent("""
    checkers:
      trailers:
        forbid_in: {Signed-off-by: "(?i)\\\\b(claude|copilot)\\\\b"}
    """).lstrip()


def test_cyrillic_and_greek_look_alikes_do_not_hide_a_forbidden_identity(repo, cli):
    repo.commit("seed", {"redfirst.yaml": IDENTITY})
    repo.git("checkout", "-q", "-b", "feature")
    # U+0421 CYRILLIC CAPITAL ES, U+0430 CYRILLIC SMALL A; U+03BF GREEK SMALL OMICRON
    repo.commit("one\n\nSigned-off-by: \u0421l\u0430ude <c@example.invalid>\n", {"a.txt": "1\n"})
    repo.commit("two\n\nSigned-off-by: C\u03bfpilot <c@example.invalid>\n", {"b.txt": "1\n"})
    repo.commit("three\n\nSigned-off-by: \u0410nna Person <p@example.invalid>\n", {"c.txt": "1\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    assert len(_findings(doc, "trailer-identity")) == 2  # a person's name in Cyrillic is no finding


def test_a_merge_that_changes_what_its_parents_merge_to_is_judged(repo, cli):
    """Merges are skipped as the merged-in commits are judged, but an evil merge (a change made in the merge
    commit itself, `git merge --no-commit` then an edit) landed with no trailer: "All 1 checks green" (round 4
    of issue 34). Only a merge whose tree is git's own merge of its parents is skipped."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  trailers: {require: {Signed-off-by: \".+@.+\"}}\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("side work\n\nSigned-off-by: A <a@example.com>\n", {"s.txt": "s\n"})
    repo.git("checkout", "-q", "-b", "feature", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")        # a clean merge: skipped
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    trailers = next(i for i in doc["items"] if i["id"] == "trailers")
    assert rc == 0 and trailers["counts"]["merges_skipped"] == 1, doc
    repo.git("reset", "-q", "--hard", "main")
    repo.git("merge", "-q", "--no-ff", "--no-commit", "side")
    repo.write("evil.txt", "not signed off\n")
    repo.git("add", "evil.txt")
    repo.git("commit", "-q", "-m", "Merge side")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    trailers = next(i for i in doc["items"] if i["id"] == "trailers")
    assert rc == 1 and trailers["counts"]["merges_skipped"] == 0, doc
    assert [f["rule"] for f in trailers["findings"]] == ["trailer-required"]


def test_under_first_parent_a_merge_stands_for_the_commits_it_brings(repo, cli):
    """`first_parent` judges the head's first-parent line, a merged-in branch's commits being the merge's: the
    merge was then skipped too, so an unsigned commit merged in cleanly beside one signed commit was judged by
    nobody: "All 1 checks green" (round 4 of issue 34). The merge is judged in their place."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  trailers: {require: {Signed-off-by: \".+@.+\"}, "
                                          "first_parent: true}\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("unsigned work", {"u.txt": "u\n"})
    repo.git("checkout", "-q", "-b", "feature", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")
    repo.commit("signed\n\nSigned-off-by: A <a@example.com>\n", {"x.txt": "x\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    trailers = next(i for i in doc["items"] if i["id"] == "trailers")
    assert rc == 1 and trailers["counts"]["checked"] == 2, doc
    assert [f["rule"] for f in trailers["findings"]] == ["trailer-required"]
