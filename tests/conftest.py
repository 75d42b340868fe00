"""Suite-wide test policy.

- GPU tests (`@pytest.mark.gpu`) are deselected on a machine without a CUDA device and
  cuda-python, and the run says so; they run on the H200 through the device tool.
- A required component (git, a Debian test framework, Slurm) that is missing fails the
  test when `CI` is set, and skips it elsewhere: a skipped test is not a passed test.
- The projects the tests build run their pytest without Hypothesis's pytest plugin (see
  `_projects_run_pytest_without_hypothesis`).
- redfirst's bytecode is made once before any test runs (`compile_redfirst`), so the suite's
  subprocesses never compile the package again.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

_deselected_gpu: list[str] = []


def compile_redfirst() -> None:
    """Write current bytecode for every module of the redfirst package the suite imports, beside its
    source (its `__pycache__`, which git ignores), whatever PYTHONDONTWRITEBYTECODE says.

    A caller may rely on this: once it returns, every Python process of the suite that imports
    redfirst (each `gates`, `mutate`, `leases`, fleet worker and torture holder) reads that bytecode
    instead of compiling the package's source again; with PYTHONDONTWRITEBYTECODE set, as it is
    in this machine's shells and in every run `mutate` starts, none of them would ever write it,
    and each paid 0.2-0.5 s of CPU for it. Bytecode of an edited module is remade (Python checks
    each file's size and time). tests/layout/test_bytecode.py checks it."""
    import compileall

    import redfirst

    compileall.compile_dir(os.path.dirname(redfirst.__file__), quiet=1, workers=1)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):      # once, in the controller, before xdist starts its workers
        compile_redfirst()


def cuda_available() -> bool:
    try:
        from cuda.bindings import runtime  # type: ignore[import-not-found]
    except ImportError:
        return False
    try:
        err, count = runtime.cudaGetDeviceCount()
    except Exception:
        return False
    return int(err) == 0 and count > 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda_available():
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("gpu") else keep).append(item)
    if drop:
        _deselected_gpu.extend(i.nodeid for i in drop)
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


_NO_GPU = "no CUDA device or no cuda-python here (they run on the H200; see docs/evidence/)"


def pytest_report_header(config: pytest.Config) -> str | None:
    return None if cuda_available() else f"redfirst: GPU tests (-m gpu) are deselected: {_NO_GPU}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if _deselected_gpu:
        terminalreporter.write_line(f"redfirst: deselected {len(_deselected_gpu)} GPU test(s): {_NO_GPU}")
    elif getattr(config.option, "numprocesses", None) and not cuda_available():
        # Under xdist the workers deselect; the controller says so for them.
        terminalreporter.write_line(f"redfirst: GPU tests (-m gpu) were deselected on every worker: {_NO_GPU}")


# Hypothesis is installed for the suite's own property tests, so every pytest a test project
# runs would load its plugin, whose terminal summary imports all of Hypothesis: 0.84 s of the
# 1.4 s a one-test cold pytest run takes on a 2-core machine, paid by every cold gate run of
# the suite. No test project uses Hypothesis; the tests that exercise third-party plugins in
# the warm process drop this variable themselves (`ADDOPTS`).
ADDOPTS = "PYTEST_ADDOPTS"
NO_HYPOTHESIS = "-p no:hypothesispytest"


@pytest.fixture(autouse=True, scope="session")
def _projects_run_pytest_without_hypothesis() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ADDOPTS, f"{os.environ.get(ADDOPTS, '')} {NO_HYPOTHESIS}".strip())
        yield


@pytest.fixture(autouse=True)
def _not_under_github_actions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's own runs of gates, mutate and checkers must not write annotations, step
    summaries or outputs into the GitHub job that runs the suite; tests of that output set
    these variables themselves."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "RUNNER_TEMP"):
        monkeypatch.delenv(name, raising=False)


def require(what: str, available: bool, how: str = "") -> None:
    """Fail under CI, skip elsewhere, when a required component is missing."""
    if available:
        return
    message = f"{what} is required{': ' + how if how else ''}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set, so a missing component fails instead of skipping)")
    pytest.skip(message)


def require_tool(name: str, how: str = "") -> str:
    path = shutil.which(name)
    require(name, path is not None, how)
    assert path is not None
    return path


@pytest.fixture(scope="session")
def need_tool():
    """`need_tool("cmake")` -> its path; fails under CI, skips elsewhere, when missing."""
    return require_tool
