"""What a killed redfirst process leaves in the temporary folder is removed by the next one (redfirst.tempdirs):
real processes, SIGKILLed, under a TMPDIR of the test's own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

MAKE = """\
import sys, time
from redfirst import tempdirs
print(tempdirs.make(sys.argv[1]), flush=True)
time.sleep(300)
"""


def _maker(tmp: Path, prefix: str) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", MAKE, prefix], env={**os.environ, "TMPDIR": str(tmp)},
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_owners_folder_is_removed_by_the_next_maker_and_a_live_ones_kept(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    killed, left = _maker(tmp, "redfirst-pytest-cache-")
    live, kept = _maker(tmp, "redfirst-pytest-cache-")
    other, other_kind = _maker(tmp, "mutate-fleet-")
    old = tmp / "redfirst-pytest-cache-abc123"       # made by an older redfirst: no owner in its name
    old.mkdir()
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        other.send_signal(signal.SIGKILL)
        other.wait()
        assert left.is_dir() and kept.is_dir()
        nxt, made = _maker(tmp, "redfirst-pytest-cache-")
        nxt.kill()
        nxt.wait()
        assert not left.exists(), "the folder a SIGKILLed process left is still there"
        assert kept.is_dir() and made.is_dir() and old.is_dir()
        assert other_kind.is_dir()        # another kind is swept by a maker of that kind only
    finally:
        live.kill()
        live.wait()



def test_the_pytest_cache_folder_of_a_killed_mutate_run_is_gone_after_the_next_run(tmp_path: Path) -> None:
    import shutil
    import time

    tmp, root = tmp_path / "tmp", tmp_path / "proj"
    tmp.mkdir()
    for d in ("gates", "mutations"):
        (root / d).mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "k.yaml").write_text("gate: k\ndriver:\n  type: pytest\n  run: [test_k.py]\n  timeout: 60\n")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "test_k.py").write_text("import os, time\nfrom calc import add\n\ndef test_k():\n"
                                    "    if os.environ.get('HOLD') and add(2, 2) != 4:\n        time.sleep(60)\n"
                                    "    assert add(2, 2) == 4\n")
    (root / "mutations" / "m.yaml").write_text("- mutation: minus\n  file: calc.py\n  anchor: 'a + b'\n"
                                               "  replace: 'a - b'\n  expect: {red: [k]}\n")
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.email=r@x", "-c", "user.name=r", "commit", "-qm", "k"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    mutate = shutil.which("mutate") or str(Path(sys.executable).with_name("mutate"))
    env = {**os.environ, "TMPDIR": str(tmp)}
    first = subprocess.Popen([mutate, "--root", str(root), "--no-cache"], env={**env, "HOLD": "1"}, cwd=root,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    end = time.monotonic() + 60
    while not list(tmp.glob("redfirst-pytest-cache-*")):
        assert time.monotonic() < end and first.poll() is None, "the first run made no pytest cache folder"
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    left = list(tmp.glob("redfirst-pytest-cache-*"))
    assert left
    second = subprocess.run([mutate, "--root", str(root), "--no-cache"], env=env, cwd=root, capture_output=True,
                            text=True, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    assert not [p for p in left if p.exists()], f"left by the killed run: {left}"
