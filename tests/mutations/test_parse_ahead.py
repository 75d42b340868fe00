"""While a worker's mutation runs, the engine applies the worker's next mutation to its file and
compiles it (Engine.start_one), off the path between two runs. That work stands only for the
bytes it was done on: a file that changed since is applied again as it is."""

from __future__ import annotations

import json

from mutate_helpers import git, mutate, require_git, write

TEST_A = '''
    import os
    import time

    from calc import a


    def test_a():
        if a() != 1:    # under the mutation only: rewrites the next mutation's file as it runs
            time.sleep(0.5)
            with open(os.path.join(os.path.dirname(__file__), "..", "calc", "bee.py"), "w") as f:
                f.write("def b():\\n    return 3\\n")
        assert a() == 1
'''


def test_the_next_mutation_is_applied_to_its_file_as_it_is_when_its_turn_comes(tmp_path, monkeypatch):
    # The next mutation's anchor was in its file when it was applied ahead, and is gone when its
    # turn comes: the work done ahead would have written its stale text back over the file, run
    # the gate, and reported a KILLED for an anchor the file no longer holds.
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write(root, "calc/__init__.py", "def a():\n    return 1\n")
    write(root, "calc/bee.py", "def b():\n    return 2\n")
    write(root, "tests/test_a.py", TEST_A)
    write(root, "tests/test_b.py", "from calc.bee import b\n\n\ndef test_b():\n    assert b() in (2, 3)\n")
    for name in ("a", "b"):
        write(root, f"gates/g{name}.yaml", f"gate: g{name}\ndriver:\n  type: pytest\n  run: [tests/test_{name}.py]\n"
                                           "  timeout: 60\n")
    write(root, "mutations/m.yaml", """
        - {mutation: m1-a, file: calc/__init__.py, anchor: "return 1", replace: "return 10", expect: {red: [ga]}}
        - {mutation: m2-b, file: calc/bee.py, anchor: "return 2", replace: "return 20", expect: {red: [gb]}}
    """)
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    proc = mutate(root, "-n", "1", "--json", "--no-cache")
    got = {i["id"]: (i["verdict"], i["reason"]) for i in json.loads(proc.stdout)["items"]}
    assert got["m1-a"][0] == "KILLED", (got, proc.stderr)
    assert got["m2-b"] == ("ERROR", "calc/bee.py: anchor not found: 'return 2'"), (got, proc.stderr)
