"""`checkers` reads redfirst.yaml through the shared loader (redfirst.yamlsrc): a key written twice,
a document nested past the bound, invalid UTF-8 are each refused naming file:line, as `gates check`
refuses them in gate files (issue 34.2)."""

from __future__ import annotations

import subprocess
import sys

POLICY = "checkers:\n  append_only:\n    - {path: index.md}\n"


def _checkers(root, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.checkers.cli", *args, "--root", str(root)],
                          capture_output=True, text=True, timeout=120, cwd=root)


def test_a_checker_written_twice_is_refused_not_its_first_rule_lost(repo):
    # the first `append_only` guards index.md; YAML readers keep only the second (which guards nothing here)
    twice = POLICY + "  append_only:\n    - {path: other.md}\n"
    repo.commit("seed", {"redfirst.yaml": twice, "index.md": "a\nb\n", "other.md": "x\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("edit an index row", {"index.md": "changed\nb\n"})
    proc = _checkers(repo.path, "run", "--base", "main")
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2, both
    assert "Traceback" not in both and "All" not in proc.stdout
    assert "redfirst.yaml@" in both and ":4: duplicate key 'append_only'" in both


def test_a_deeply_nested_policy_is_a_message_naming_the_line(repo):
    deep = POLICY + "x:\n  " + "[" * 3000 + "]" * 3000 + "\n"
    repo.commit("seed", {"redfirst.yaml": deep, "index.md": "a\n"})
    proc = _checkers(repo.path, "run", "--config", str(repo.path / "redfirst.yaml"))
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{repo.path / 'redfirst.yaml'}:5: " in both and "nested" in both


def test_invalid_utf8_in_a_config_file_names_its_line(repo):
    repo.commit("seed", {"index.md": "a\n"})
    bad = repo.path / "policy.yaml"
    bad.write_bytes(POLICY.encode() + b"# caf\xe9\n")
    proc = _checkers(repo.path, "run", "--config", str(bad))
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both, both
    assert f"{bad}:4: " in both and "UTF-8" in both


def test_a_key_two_merged_mappings_both_set_is_refused_not_one_rule_lost(repo):
    # `<<: [*a, *b]` keeps only a's append_only (YAML 1.1 merge): the rule on other.md would be gone
    merged = ("rules_a: &a {append_only: [{path: index.md}]}\nrules_b: &b {append_only: [{path: other.md}]}\n"
              "checkers:\n  <<: [*a, *b]\n")
    repo.commit("seed", {"redfirst.yaml": merged, "index.md": "a\n", "other.md": "x\n"})
    proc = _checkers(repo.path, "run", "--config", str(repo.path / "redfirst.yaml"))
    both = proc.stdout + proc.stderr
    assert proc.returncode == 2 and "Traceback" not in both and "All" not in proc.stdout, both
    assert f"{repo.path / 'redfirst.yaml'}:4: `<<` merges 'append_only' from two mappings" in both, both


def test_a_merge_the_mapping_overrides_or_of_distinct_keys_still_loads(tmp_path):
    from redfirst import yamlsrc

    text = ("a: &a {x: 1, y: 2}\nb: &b {z: 3}\nc:\n  <<: [*a, *b]\n  y: 9\nd:\n  <<: *a\n  <<: *b\n")
    data = yamlsrc.load_text(text, tmp_path / "f.yaml").data
    assert data["c"] == {"x": 1, "y": 9, "z": 3} and data["d"] == {"x": 1, "y": 2, "z": 3}
