"""A `script` check runs whole from the merge base (issue 34.1): the script and every module it
imports come from the merge base, the head is only the data it reads. A range that adds a module
shadowing one the script imports, rewrites a helper, or commits a bytecode cache cannot turn the
base script's verdict into "All checks green"."""

from __future__ import annotations

import importlib.util
import posixpath
import py_compile
import sys
import textwrap

import pytest


def _text(text: str) -> str:
    return textwrap.dedent(text).lstrip()


POLICY = _text("""
    checkers:
      script:
        - {path: tools/check.py}
    """)

# As vllm.cpp's scripts do: the repository root found from the script's own file.
CHECK = _text("""
    import sys
    from pathlib import Path

    ROOT = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(ROOT / "lib"))
    import json
    import rules
    from policy import states

    state = json.loads((ROOT / "state.json").read_text())["state"]
    bad = rules.violations(state) + states.unknown(state)
    for why in bad:
        print(f"ERROR: state.json:1: {why}", file=sys.stderr)
    sys.exit(1 if bad else 0)
    """)
RULES = 'def violations(state):\n    return [] if state in ("ok", "fine") else [f"state is {state}"]\n'
STATES = 'def unknown(state):\n    return [] if state in ("ok", "fine") else [f"unknown state {state}"]\n'
SEED = {"redfirst.yaml": POLICY, "tools/check.py": CHECK, "tools/rules.py": RULES,
        "lib/policy/__init__.py": "", "lib/policy/states.py": STATES, "state.json": '{"state": "ok"}\n'}
STALE = {"state.json": '{"state": "stale"}\n'}


def _script_item(doc: dict) -> dict:
    (item,) = [i for i in doc["items"] if i["id"].startswith("script:")]
    return item


def _range(repo, cli, changes: dict[str, str]) -> tuple[int, dict]:
    repo.commit("seed", SEED)
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("the change", changes)
    return cli.json("run", "--root", str(repo.path), "--base", "main")


def _base_verdict(rc: int, doc: dict) -> None:
    """The merge base's script refuses the stale state: RED, its findings at the data it read."""
    item = _script_item(doc)
    assert rc == 1 and item["verdict"] == "RED", doc
    messages = {f["message"] for f in item["findings"]}
    assert {"state is stale", "unknown state stale"} <= messages, messages
    assert {(f["file"], f["line"]) for f in item["findings"]} == {("state.json", 1)}


@pytest.mark.parametrize("shadow", [
    # the standard library's json, shadowed by a module beside the script
    {"tools/json.py": 'def loads(text):\n    return {"state": "ok"}\n'},
    # a package shadowing it through a folder the script puts on sys.path
    {"lib/json/__init__.py": 'def loads(text):\n    return {"state": "ok"}\n'},
])
def test_a_module_the_range_adds_beside_the_script_is_not_imported(repo, cli, shadow):
    _base_verdict(*_range(repo, cli, {**STALE, **shadow}))


LENIENT_RULES = {"tools/rules.py": "def violations(state):\n    return []\n"}  # beside the script
LENIENT_STATES = {"lib/policy/states.py": "def unknown(state):\n    return []\n"}  # a package on a path it adds


@pytest.mark.parametrize("rewrite", [LENIENT_RULES, LENIENT_STATES, {**LENIENT_RULES, **LENIENT_STATES}])
def test_a_helper_the_range_rewrites_runs_as_at_the_merge_base(repo, cli, rewrite):
    _base_verdict(*_range(repo, cli, {**STALE, **rewrite}))


def test_a_bytecode_cache_the_range_commits_is_never_loaded(repo, cli, tmp_path):
    # An unchecked-hash .pyc beside an unchanged helper: Python would load it without looking at
    # the source. The merge base's source is what runs.
    lenient = tmp_path / "rules.py"
    lenient.write_text("def violations(state):\n    return []\n", encoding="utf-8")
    cached = importlib.util.cache_from_source(str(repo.path / "tools" / "rules.py"))
    compiled = tmp_path / "rules.pyc"
    py_compile.compile(str(lenient), cfile=str(compiled), doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    repo.commit("seed", SEED)
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("state.json", STALE["state.json"])
    target = repo.path / cached.removeprefix(str(repo.path) + "/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(compiled.read_bytes())
    repo.git("add", "-f", "-A")
    repo.git("commit", "-q", "-m", "stale state, lenient cache")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    item = _script_item(doc)
    assert rc == 1 and "state is stale" in {f["message"] for f in item["findings"]}, doc


def test_a_helper_reading_data_from_its_own_file_reads_the_head(repo, cli):
    # The base's code runs, yet `__file__` of the script and of every helper is the head's: a
    # helper that finds the data from its own location judges the head, never the base's copy.
    reader = _text("""
        import json
        from pathlib import Path

        def state():
            return json.loads((Path(__file__).resolve().parents[1] / "state.json").read_text())["state"]
        """)
    check = _text("""
        import sys
        import reader
        if reader.state() != "ok":
            print("ERROR: state.json:1: state is " + reader.state(), file=sys.stderr)
            sys.exit(1)
        """)
    repo.commit("seed", {"redfirst.yaml": POLICY, "tools/check.py": check, "tools/reader.py": reader,
                         "state.json": '{"state": "ok"}\n'})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0, doc
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale", STALE)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _script_item(doc)["findings"][0]["message"] == "state is stale", doc


def test_the_script_sees_its_arguments_and_the_head_as_its_working_folder(repo, cli):
    check = _text("""
        import os
        import sys
        print("ERROR: args:1: " + repr(sys.argv[1:]))
        print("ERROR: where:1: " + repr(os.path.realpath(os.getcwd()) == os.path.realpath(sys.argv[2])))
        print("ERROR: main:1: " + __name__)
        """)
    policy = POLICY.replace("{path: tools/check.py}", '{path: tools/check.py, args: ["{head}", "' +
                            str(repo.path) + '"]}')
    head = repo.commit("seed", {"redfirst.yaml": policy, "tools/check.py": check})
    rc, doc = cli.json("run", "--root", str(repo.path))
    found = {f["file"]: f["message"] for f in _script_item(doc)["findings"]}
    assert found == {"args": repr([head, str(repo.path)]), "where": "True", "main": "__main__"}, found


SH_POLICY = POLICY.replace("tools/check.py", "tools/check.sh")
SH_CHECK = '. "$(dirname "$0")/lib.sh"\ngrep -q ok state.txt || fail "state is stale"\n'


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script")
def test_a_shell_script_whose_folder_changed_in_the_range_is_not_run(repo, cli):
    # A shell script's sourced files cannot be told from its data: a range that changes a file
    # beside it is NO_DECISION, never judged by the head's rewrite of what it sources.
    lib = 'fail() { echo "ERROR: state.txt:1: $1"; exit 1; }\n'
    repo.commit("seed", {"redfirst.yaml": SH_POLICY.replace("tools/check.sh}", "tools/check.sh, interpreter: sh}"),
                         "tools/check.sh": SH_CHECK, "tools/lib.sh": lib, "state.txt": "ok\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale", {"state.txt": "stale\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _script_item(doc)["findings"][0]["message"] == "state is stale", doc
    repo.commit("lenient helper", {"tools/lib.sh": "fail() { exit 0; }\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    item = _script_item(doc)
    assert rc == 3 and item["verdict"] == "NO_DECISION", doc
    assert "tools/lib.sh" in item["reason"] and "merge base" in item["reason"]


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell wrapper")
@pytest.mark.parametrize("runner", ["bin/runner", "bin/python"])
def test_an_interpreter_kept_in_the_repository_is_policy_too(repo, cli, runner):
    # `interpreter:` naming a program of the repository names code: the range's rewrite of it (here:
    # a wrapper that no longer runs the check) does not judge the range.
    wrapper = '#!/bin/sh\nexec "' + sys.executable + '" "$@"\n'
    policy = POLICY.replace("{path: tools/check.py}", "{path: tools/check.py, interpreter: " + runner + "}")
    repo.commit("seed", {**SEED, "redfirst.yaml": policy, runner: wrapper})
    (repo.path / runner).chmod(0o755)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "executable wrapper")
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale", STALE)
    _base_verdict(*cli.json("run", "--root", str(repo.path), "--base", "main"))
    repo.commit("wrapper that passes", {runner: "#!/bin/sh\nexit 0\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    item = _script_item(doc)
    assert rc == 3 and item["verdict"] == "NO_DECISION" and f"{runner} changed" in item["reason"], doc


def test_a_helper_loaded_by_its_path_runs_as_at_the_merge_base(repo, cli):
    # importlib's load-by-path, as scripts without a package layout do it
    check = _text("""
        import importlib.util
        import sys
        from pathlib import Path

        ROOT = Path(__file__).resolve().parents[1]
        spec = importlib.util.spec_from_file_location("rules", ROOT / "tools" / "rules.py")
        rules = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rules)
        state = (ROOT / "state.txt").read_text().strip()
        for why in rules.violations(state):
            print(f"ERROR: state.txt:1: {why}", file=sys.stderr)
        sys.exit(1 if rules.violations(state) else 0)
        """)
    repo.commit("seed", {"redfirst.yaml": POLICY, "tools/check.py": check, "tools/rules.py": RULES, "state.txt": "ok\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale, lenient rules", {"state.txt": "stale\n", **LENIENT_RULES})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and [f["message"] for f in _script_item(doc)["findings"]] == ["state is stale"], doc


def test_no_folder_to_export_the_policy_code_to_is_an_error_not_a_traceback(repo, cli, tmp_path, monkeypatch):
    import tempfile

    not_a_folder = tmp_path / "tmp-is-a-file"
    not_a_folder.write_text("", encoding="utf-8")
    repo.commit("seed", SEED)
    monkeypatch.setattr(tempfile, "tempdir", str(not_a_folder))
    rc, doc = cli.json("run", "--root", str(repo.path))
    item = _script_item(doc)
    assert rc == 2 and item["verdict"] == "ERROR" and "cannot export" in item["reason"], doc


# Every way Python turns a repository file into running code, each as a script may load a helper
# by its path: the code that runs is the merge base's (issue 34.1, adversarial findings).
LOADERS = {
    "source-file-loader": """
        import importlib.machinery, importlib.util
        loader = importlib.machinery.SourceFileLoader("rules", str(HELPER))
        spec = importlib.util.spec_from_loader("rules", loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        violations = module.violations
        """,
    "spec-by-hand": """
        import importlib.machinery, importlib.util
        spec = importlib.machinery.ModuleSpec(
            "rules", importlib.machinery.SourceFileLoader("rules", str(HELPER)), origin=str(HELPER))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        violations = module.violations
        """,
    "runpy-run-path": """
        import runpy
        violations = runpy.run_path(str(HELPER))["violations"]
        """,
    "exec-open-read": """
        scope = {}
        exec(open(HELPER).read(), scope)
        violations = scope["violations"]
        """,
    "compile-of-a-file": """
        scope = {}
        exec(compile(HELPER.read_bytes(), str(HELPER), "exec"), scope)
        violations = scope["violations"]
        """,
}


@pytest.mark.parametrize("load", LOADERS.values(), ids=list(LOADERS))
def test_a_helper_loaded_from_its_file_in_any_way_runs_as_at_the_merge_base(repo, cli, load):
    check = _text("""
        import sys
        from pathlib import Path

        ROOT = Path(__file__).resolve().parents[1]
        HELPER = ROOT / "tools" / "rules.py"
        """) + _text(load) + _text("""
        state = (ROOT / "state.txt").read_text().strip()
        for why in violations(state):
            print(f"ERROR: state.txt:1: {why}", file=sys.stderr)
        sys.exit(1 if violations(state) else 0)
        """)
    repo.commit("seed", {"redfirst.yaml": POLICY, "tools/check.py": check, "tools/rules.py": RULES, "state.txt": "ok\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0 and _script_item(doc)["verdict"] == "GREEN", doc  # a working script reads GREEN
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale, lenient rules", {"state.txt": "stale\n", **LENIENT_RULES})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and [f["message"] for f in _script_item(doc)["findings"]] == ["state is stale"], doc


SHEBANG_CHECK = _text("""
    #!/usr/bin/env python3
    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from checklib import rules
    state = open("state.txt").read().strip()
    for why in rules.violations(state):
        print(f"ERROR: state.txt:1: {why}")
    sys.exit(1 if rules.violations(state) else 0)
    """)


@pytest.mark.skipif(sys.platform == "win32", reason="a script run by its shebang")
def test_a_python_script_without_the_suffix_is_told_by_its_shebang(repo, cli):
    # No `.py`, no `interpreter:`: the shebang says Python, so its imports (a package in a
    # subfolder) come from the merge base like a `.py` script's.
    policy = POLICY.replace("tools/check.py", "tools/check-record")
    repo.commit("seed", {"redfirst.yaml": policy, "tools/check-record": SHEBANG_CHECK,
                         "tools/checklib/__init__.py": "", "tools/checklib/rules.py": RULES, "state.txt": "ok\n"})
    (repo.path / "tools/check-record").chmod(0o755)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "executable")
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0 and _script_item(doc)["verdict"] == "GREEN", doc
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale, lenient rules", {"state.txt": "stale\n",
                                         "tools/checklib/rules.py": "def violations(state):\n    return []\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and [f["message"] for f in _script_item(doc)["findings"]] == ["state is stale"], doc


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script")
@pytest.mark.parametrize("lib", ["tools/lib/fail.sh", "shared/fail.sh", "shared/fail"])
def test_a_shell_script_is_not_run_when_code_it_may_source_changed_anywhere(repo, cli, lib):
    # What a shell script sources cannot be told from its data: a range changing a file in its folder
    # tree, or a file elsewhere that is code (a script suffix, a shebang), is NO_DECISION.
    check = f'. "$(dirname "$0")/{posixpath.relpath(lib, "tools")}"\ngrep -q ok state.txt || fail "state is stale"\n'
    body = "#!/bin/sh\n" if "." not in lib.rsplit("/", 1)[-1] else ""
    repo.commit("seed", {"redfirst.yaml": SH_POLICY.replace("tools/check.sh}", "tools/check.sh, interpreter: sh}"),
                         "tools/check.sh": check, lib: body + 'fail() { echo "ERROR: state.txt:1: $1"; exit 1; }\n',
                         "state.txt": "ok\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("stale", {"state.txt": "stale\n", "notes/readme.txt": "data, not code\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _script_item(doc)["findings"][0]["message"] == "state is stale", doc
    repo.commit("lenient helper", {lib: body + "fail() { exit 0; }\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    item = _script_item(doc)
    assert rc == 3 and item["verdict"] == "NO_DECISION" and lib in item["reason"], doc
