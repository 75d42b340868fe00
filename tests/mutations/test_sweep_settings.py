"""`mutate sweep` runs mutmut with the user's own mutmut settings (do_not_mutate, the
timeouts, extra pytest arguments), from pyproject's [tool.mutmut] or setup.cfg's [mutmut],
with only the source paths, the files to mutate and the test selection set by the sweep.
The settings are read back by mutmut 3 itself, as its run will read them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from redfirst.mutations import mutmut

READ_BACK = ("import json; from mutmut.configuration import _load_config as load; c = load(); "
             "print(json.dumps({'do_not_mutate': c.do_not_mutate, 'patterns': c.do_not_mutate_patterns, "
             "'multiplier': c.timeout_multiplier, 'constant': c.timeout_constant, 'args': c.pytest_add_cli_args, "
             "'only': c.only_mutate, 'sources': [str(p) for p in c.source_paths], "
             "'also': [str(p) for p in c.also_copy], 'tests': c.pytest_add_cli_args_test_selection}))")


def _as_mutmut_reads_it(scratch: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", READ_BACK], cwd=scratch, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git missing")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("def f():\n    return 1\n")
    (tmp_path / "extra.json").write_text("{}\n")
    return tmp_path


def test_pyproject_settings_are_kept_with_the_sweep_s_own(scratch: Path):
    (scratch / "pyproject.toml").write_text(
        '[project]\nname = "p"\n\n[tool.mutmut]\nsource_paths = ["elsewhere/"]\n'
        'do_not_mutate = ["pkg/generated_*"]\ndo_not_mutate_patterns = ["print(*"]\n'
        'timeout_multiplier = 3.0\ntimeout_constant = 7.5\npytest_add_cli_args = ["-p", "no:randomly"]\n'
        'also_copy = ["extra.json"]\n\n[tool.other]\nx = 1\n')
    mutmut.write_config(scratch, ["pkg/"], ["pkg/a.py"], ["tests/"])
    got = _as_mutmut_reads_it(scratch)
    assert got["do_not_mutate"] == ["pkg/generated_*"]
    assert got["multiplier"] == 3.0 and got["constant"] == 7.5
    assert got["args"] == ["-p", "no:randomly"]
    assert "print(*" in got["patterns"] and set(mutmut.LOGGING_PATTERNS) <= set(got["patterns"])
    assert "extra.json" in got["also"]
    # the sweep's own: what it mutates and which tests it runs
    assert got["sources"] == ["pkg"] and got["only"] == ["pkg/a.py"] and got["tests"] == ["tests/"]
    assert "[tool.other]" in (scratch / "pyproject.toml").read_text()


def test_setup_cfg_settings_are_kept_with_the_sweep_s_own(scratch: Path):
    (scratch / "setup.cfg").write_text("[metadata]\nname = p\n\n[mutmut]\nsource_paths = elsewhere/\n"
                                       "do_not_mutate =\n    pkg/skip.py\n    pkg/gen_*\ntimeout_multiplier = 2.5\n")
    mutmut.write_config(scratch, ["pkg/"], ["pkg/a.py"], [])
    got = _as_mutmut_reads_it(scratch)
    assert got["do_not_mutate"] == ["pkg/skip.py", "pkg/gen_*"]
    assert got["multiplier"] == 2.5
    assert got["sources"] == ["pkg"] and got["only"] == ["pkg/a.py"]
    assert "name = p" in (scratch / "setup.cfg").read_text()
