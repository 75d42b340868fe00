"""A user's project beside an installed redfirst (issue 32): modules of its own named `gates`,
`leases`, `mutations` and `checkers`, with and without a redfirst configuration, under `python -m
pytest` and the `pytest` script of a fresh virtual environment that holds redfirst's wheel.

The wheel is built from this checkout and installed without its dependencies; those come from the
environment running this test through a folder of links (every entry of its site-packages except
redfirst's own), so nothing is fetched and the environment sees exactly one redfirst: the wheel's."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # A copy of the tracked files, so the build leaves nothing in the checkout (build/, *.egg-info).
    src = out / "src"
    files = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO).stdout.split("\0")
    for rel in filter(None, files):
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).write_bytes((REPO / rel).read_bytes())
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
                 out)
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("redfirst-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Path:
    home = tmp_path_factory.mktemp("venv")
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(home / "v")], home)
    assert made.returncode == 0, made.stderr
    python = home / "v" / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], home)
                .stdout.strip())
    # The dependencies, without redfirst: links to every entry of this environment's site-packages but its own.
    deps = home / "deps"
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        if not entry.name.lower().startswith(("redfirst", "__editable__", "_redfirst")) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    (site / "deps.pth").write_text(f"{deps}\n")
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                      "--no-index", str(wheel)], home)
    assert installed.returncode == 0, installed.stderr
    # The `pytest` script pip writes for pytest's console entry point, for this environment's interpreter.
    script = home / "v" / "bin" / "pytest"
    script.write_text(f"#!{python}\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n")
    script.chmod(0o755)
    return home / "v"


def _env() -> dict[str, str]:
    # The user's shell: no PYTHONPATH of ours, no state of this test session.
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "GATES_", "REDFIRST_"))}


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    _run(["git", "init", "-q"], root)
    return root


OWN_MODULES = {
    "gates.py": "KIND = 'logic gates'\n",
    "leases.py": "KIND = 'rental leases'\n",
    "mutations/__init__.py": "KIND = 'genome mutations'\n",
    "checkers.py": "KIND = 'board game'\n",
    "tests/test_own.py": """\
        import checkers
        import gates
        import leases
        import mutations


        def test_the_projects_own_modules_are_imported():
            assert gates.KIND == "logic gates" and leases.KIND == "rental leases"
            assert mutations.KIND == "genome mutations" and checkers.KIND == "board game"
        """,
    "pytest.ini": "[pytest]\npythonpath = .\n",
}


def test_the_wheel_holds_one_top_level_package(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (top_level,) = (n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert z.read(top_level).decode().split() == ["redfirst"]
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {"redfirst"}
    assert "redfirst = redfirst.gates.pytest_plugin" in entry_points
    assert "gates = redfirst.gates.cli:main" in entry_points


@pytest.mark.parametrize("runner", ["python -m pytest", "pytest"])
def test_a_project_with_modules_named_like_redfirsts_parts_passes_its_own_tests(venv: Path, tmp_path: Path,
                                                                                  runner: str):
    project = _write(tmp_path / "logic", OWN_MODULES)
    argv = [str(venv / "bin" / "python"), "-m", "pytest"] if runner != "pytest" else [str(venv / "bin" / "pytest")]
    out = _run([*argv, "-q", "-p", "no:cacheprovider"], project, _env())
    said = out.stdout + out.stderr
    assert out.returncode == 0, said
    assert "1 passed" in said and "Error while loading plugin" not in said and "redfirst" not in said.lower(), said


@pytest.mark.parametrize("config", [None, "checkers: {commit_style: {max_subject: 72}}\n"],
                         ids=["no redfirst.yaml", "a redfirst.yaml without gates"])
def test_gate_files_outside_configured_gate_folders_are_no_items(venv: Path, tmp_path: Path, config: str | None):
    # A YAML file with `gate:` in a folder named gates/, where no redfirst.yaml configures gate folders.
    project = _write(tmp_path / "plain", {**{k: v for k, v in OWN_MODULES.items() if k != "gates.py"},
                                          "gates/__init__.py": "KIND = 'logic gates'\n",
                                          "gates/nand.yaml": "gate: nand\ntruth: [1, 1, 1, 0]\n",
                                          **({"redfirst.yaml": config} if config else {})})
    out = _run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "gates", "tests"],
               project, _env())
    said = out.stdout + out.stderr
    assert out.returncode == 0 and "1 passed" in said and "nand" not in said, said


def test_a_gates_folder_of_gate_files_runs_its_gates_and_the_users_import_gates_is_the_users(
        venv: Path, tmp_path: Path):
    project = _write(tmp_path / "chip", {
        **{k: v for k, v in OWN_MODULES.items() if k != "gates.py"},
        "redfirst.yaml": "gates:\n  paths: [gates]\n",
        "gates/__init__.py": "KIND = 'logic gates'\n",
        "gates/own.yaml": "gate: own\ndriver: {type: pytest, run: [tests/test_own.py]}\n",
        "gates/own-warm.yaml": "gate: own-warm\ndriver: {type: pytest-warm, run: [tests/test_own.py]}\n",
    })
    out = _run([str(venv / "bin" / "python"), "-m", "pytest", "-v", "-p", "no:cacheprovider", "gates", "tests"],
               project, _env())
    said = out.stdout + out.stderr
    assert out.returncode == 0, said
    assert "gates/own.yaml::own PASSED" in said and "gates/own-warm.yaml::own-warm PASSED" in said and "tests/test_own.py::test_the_projects_own_modules_are_imported PASSED" \
        in said, said
    # Each gate's own run (a pytest child, a warm pytest server) imported the user's `gates` too.
    for gate in ("own", "own-warm"):
        shown = _run([str(venv / "bin" / "gates"), "run", gate], project, _env())
        assert shown.returncode == 0 and "GREEN" in shown.stdout and "1 cases, 0 failed" in shown.stdout, \
            shown.stdout + shown.stderr
