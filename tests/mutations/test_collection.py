"""A mutation that breaks import or collection is DISCARDED, never KILLED (unless it says
`expect: {build: fails}`) and never ERROR (which is for a wrong mutation file): a module
that no longer imports proves nothing about what the gate's assertions check."""

from __future__ import annotations

import json
from pathlib import Path

from mutate_helpers import gate, git, mutate, write


def run_json(root: Path, *args: str) -> tuple[int, dict]:
    proc = mutate(root, "--json", *args)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def one(mid: str, anchor: str, replace: str, red: list[str], expect_build: str = "ok") -> str:
    return (f"mutation: {mid}\nfile: calc/__init__.py\nanchor: {json.dumps(anchor)}\n"
            f"replace: {json.dumps(replace)}\nexpect: {json.dumps({'build': expect_build, 'red': red})}\n")


def test_syntax_error_without_a_build_is_discarded_not_killed(repo: Path):
    write(repo, "mutations/syntax.yaml", one("syntax", "return a + b\n", "return a +\n", ["add"]))
    code, doc = run_json(repo)
    (item,) = doc["items"]
    assert (code, item["verdict"]) == (3, "DISCARDED"), item
    assert "SyntaxError" in item["reason"] and "never a kill" in item["reason"]


def test_a_module_that_no_longer_imports_is_discarded_exit_3(repo: Path):
    # Valid Python that raises at import: pytest exits 2 with a collection error.
    write(repo, "mutations/imports.yaml", one("imports", "def sub(a, b):\n", "sub = undefined_name\n\n\ndef sub(a, b):\n",
                                              ["add"]))
    code, doc = run_json(repo)
    (item,) = doc["items"]
    assert (code, item["verdict"]) == (3, "DISCARDED"), item
    assert "import or collection" in item["reason"]


def test_found_no_collectors_for_a_node_id_is_discarded_not_error(repo: Path):
    # A gate naming a node id: pytest exits 4 ("found no collectors") when the module does not import.
    write(repo, "gates/add-node.yaml", gate("add-node", "tests/test_add.py::test_add"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "node-id gate")
    write(repo, "mutations/imports.yaml", one("imports", "def sub(a, b):\n", "sub = undefined_name\n\n\ndef sub(a, b):\n",
                                              ["add-node"]))
    code, doc = run_json(repo)
    (item,) = doc["items"]
    assert (code, item["verdict"]) == (3, "DISCARDED"), item
    assert "import or collection" in item["reason"]


def test_import_broken_is_the_kill_when_the_mutation_expects_the_build_to_fail(repo: Path):
    # `compiles` builds with py_compile (which passes): the import failure is what fails.
    write(repo, "mutations/imports.yaml", one("imports", "def sub(a, b):\n", "sub = undefined_name\n\n\ndef sub(a, b):\n",
                                              ["compiles"], expect_build="fails"))
    code, doc = run_json(repo)
    (item,) = doc["items"]
    assert (code, item["verdict"]) == (0, "KILLED"), item
