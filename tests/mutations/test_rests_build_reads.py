"""A C/C++ result rests on the files its build read outside the root (issue 33, adversarial round
4): a test including a header from a vendored folder beside the project (`-I` outside the root)
decided SURVIVED; the header changed, and the cached SURVIVED was replayed where a fresh run
KILLED. The build's depfiles are its read report: every file they name outside the root is keyed
by content. Real g++, make and doctest."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write
from test_cpp_compiled import MAKEFILE, c_repo, items, mutation

LIMITED = '#include <doctest/doctest.h>\n#include "calc.h"\n#include <limit.h>\n' \
          'TEST_CASE("add") { CHECK(add(LIMIT, LIMIT) == 2 * LIMIT); }\n'


def test_a_header_outside_the_root_the_build_read_changed_is_no_cache_hit(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    outside = tmp_path / "vendor"
    write(outside, "include/limit.h", "#define LIMIT 2\n")     # 2 + 2 == 2 * 2: a * b survives
    root = c_repo(tmp_path, monkeypatch, mutation("add-times", "src/calc.c", "a + b", "a * b"),
                  makefile=MAKEFILE.replace("CXXFLAGS = -O0", f"CXXFLAGS = -O0 -I{outside}/include"))
    write(root, "tests/test_calc.cpp", LIMITED)
    git(root, "commit", "-qam", "a limit from the vendored folder")
    first = items(mutate(root, "--json"))["add-times"]
    assert first["verdict"] == "SURVIVED" and not first["cached"], first
    again = items(mutate(root, "--json"))["add-times"]
    assert again["verdict"] == "SURVIVED" and again["cached"], again      # nothing changed: a hit
    write(outside, "include/limit.h", "#define LIMIT 3\n")     # 3 * 3 != 6: a fresh run kills it
    after = items(mutate(root, "--json"))["add-times"]
    assert after["verdict"] == "KILLED" and not after["cached"], after

