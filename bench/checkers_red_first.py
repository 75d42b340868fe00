"""Red-first evidence for the checkers: disable one rule at a time (in a copy of the package) and
run the test that guards it; every line must read KILLED (the test failed with the rule gone).

Run: python bench/checkers_red_first.py [INDEX ...]
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1]
# (module, line as written, the line with its rule disabled, test file, -k selection)
M = [
 ("append_only.py", "        if tag not in (\"replace\", \"delete\"):", "        if True:", "test_append_only.py", "committed_edit"),
 ("append_only.py", "        if i >= len(new) or new[i] != line:", "        if False:", "test_append_only.py", "tail_mode"),
 ("specs.py", "    return not all(_placeholder_line(line, placeholder) for line in lines)", "    return True", "test_tree_checkers.py", "placeholder"),
 ("matrices.py", "            elif int(raw) != actual:", "            elif False:", "test_tree_checkers.py", "summary_must_equal"),
 ("matrices.py", "                if len(found) == 1:", "                if found:", "test_tree_checkers.py", "two_states"),
 ("matrices.py", "                if row.state not in allowed:", "                if False:", "test_tree_checkers.py", "done_obligations"),
 ("matrices.py", "        if not re.search(ob[\"pattern\"], text):", "        if False:", "test_agents_record_corpus.py", "flipping_one_row"),
 ("matrices.py", "            elif ob.get(\"names_row\") and not", "            elif False and not", "test_tree_checkers.py", "names_it"),
 ("trailers.py", "            if re.search(pattern, value):", "            if False:", "test_commit_checkers.py", "forbidden_identity"),
 ("trailers.py", "            if not values:", "            if False:", "test_commit_checkers.py", "missing_required"),
 ("trailers.py", "        if hit:", "        if False:", "test_commit_checkers.py", "conditional"),
 ("commit_style.py", "    if subject.rstrip().endswith(\".\"):", "    if False:", "test_commit_checkers.py", "style_subject"),
 ("trailers.py", "    kept = [c for c in commits if include_merges or not c.is_merge]", "    kept = list(commits)", "test_commit_checkers.py", "merge_commits"),
 ("doc_checkpoint.py", "    if (need_all and missing) or", "    if False and", "test_tree_checkers.py", "doc_checkpoint"),
 ("symbol_anchors.py", "    haystack = SYMBOL.sub(lambda c: \" \" * len(c.group(0)), target.replace(m.group(0), \" \" * len(m.group(0))))", "    haystack = target", "test_tree_checkers.py", "symbol_anchor_is_blanked"),
 ("symbol_anchors.py", "    if checked < floor and not findings:", "    if False:", "test_tree_checkers.py", "floor"),
 ("caps.py", "                    if len(cell.text) > cap[\"cell_chars\"]:", "                    if False:", "test_tree_checkers.py", "test_caps"),
 ("ratchets.py", "        if now > allowed:", "        if False:", "test_tree_checkers.py", "regression_and_lowering"),
 ("ratchets.py", "        elif now < allowed and new_base != now:", "        elif False:", "test_tree_checkers.py", "regression_and_lowering"),
 ("ratchets.py", "        if new_base > allowed:", "        if False:", "test_tree_checkers.py", "raising_the_baseline"),
 ("ratchets.py", "    if raised:", "    if False:", "test_tree_checkers.py", "raising_the_baseline"),
 ("env_documented.py", "        if var not in documented and var not in allow:", "        if False:", "test_tree_checkers.py", "env_vars"),
 ("env_documented.py", "        if var not in read and var not in allow:", "        if False:", "test_tree_checkers.py", "env_vars"),
 ("context.py", "        return Context(repo, GitTree(repo, head), base_tree, base_tree, \"range\", merge_base, head)", "        return Context(repo, GitTree(repo, head), base_tree, GitTree(repo, head), \"range\", merge_base, head)", "test_append_only.py", "merge_base"),
 ("model.py", "    if checked <= 0:", "    if False:", "test_commit_checkers.py", "empty_range"),
 ("report.py", "    return escape_data(value).replace(\":\", \"%3A\").replace(\",\", \"%2C\")", "    return escape_data(value)", "test_cli_output.py", "escaping"),
]


def main(only: list[str]) -> int:
    survived = 0
    for i, (name, old, new, test, k) in enumerate(M):
        if only and str(i) not in only:
            continue
        dst = Path(tempfile.gettempdir()) / f"checkers-red-first-{i}"
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(SRC / "redfirst", dst / "redfirst")
        shutil.copytree(SRC / "tests" / "checkers", dst / "tests" / "checkers")
        shutil.copy(SRC / "pyproject.toml", dst)
        shutil.copy(SRC / ".pre-commit-hooks.yaml", dst)
        module = dst / "redfirst" / "checkers" / name
        text = module.read_text()
        assert text.count(old) == 1, (name, old)
        module.write_text(text.replace(old, new))
        corpus = os.environ.get("REDFIRST_CORPUS", str(SRC / "../shared/corpus/vllm.cpp"))
        env = {**os.environ, "PYTHONPATH": str(dst), "REDFIRST_CORPUS": corpus}
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:xdist", f"tests/checkers/{test}",
                               "-k", k], cwd=dst, env=env, capture_output=True, text=True)
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-200:]
        killed = proc.returncode == 1
        survived += not killed
        print(i, name, "KILLED" if killed else f"SURVIVED rc={proc.returncode}", "|", new.strip(), "|", last)
        shutil.rmtree(dst)
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
