"""Adversarial round 2 of issue 33 on `rests.rests_on`/`holds`: a cached result rests on the
installed packages the gates import too (the read set leaves them out): a dependency edited in the
interpreter's site-packages is a miss, not the old verdict replayed. The interpreter is a virtual
environment of the test's own, so no other test sees its packages change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

from mutate_helpers import write


def _own_interpreter(tmp_path: Path) -> tuple[Path, Path]:
    """A virtual environment (its python, its site-packages) that sees this one's packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    site_packages = Path(purelib)
    (site_packages / "outer.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return python, site_packages


def test_a_dependency_edited_in_site_packages_is_no_cache_hit(repo: Path, tmp_path: Path):
    python, site_packages = _own_interpreter(tmp_path)
    name = f"redfirst_adv33_dep_{uuid.uuid4().hex[:8]}"
    dep = site_packages / f"{name}.py"
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    f"replace: \"return a + b * __import__('{name}').ONE\"\nexpect: {{red: [add]}}\n")

    def mutate() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(python), "-m", "redfirst.mutations", "--root", str(repo), "--json"], cwd=repo,
                              capture_output=True, text=True, env={**os.environ}, timeout=300)

    dep.write_text("ONE = 1\n")
    first = mutate()
    assert json.loads(first.stdout)["items"][0]["verdict"] == "SURVIVED", first.stdout + first.stderr
    assert "(cached)" in mutate().stderr           # nothing changed: the result is reused
    dep.write_text("ONE = 2\n")                    # the same size: only its content and time differ
    again = mutate()
    (item,) = json.loads(again.stdout)["items"]
    assert item["verdict"] == "KILLED" and "(cached)" not in again.stderr, again.stderr
