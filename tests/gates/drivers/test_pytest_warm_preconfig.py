"""pytest-warm: the fork is handed pytest's config with its built-in plugins registered,
built once in the warm process, where that is what the fork's own pytest.main would build
(no `-p` argument, the same values of the environment variables read while building)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from mutate_helpers import write

from redfirst.gates.drivers.pytest_warm.preconfig import Prebuilt

RECORDING_TEST = '''\
import json, os
from redfirst.gates.drivers.pytest_warm.preconfig import BUILT_IN


def test_records(request):
    with open(os.environ["PRE_LOG"], "a") as log:
        log.write(json.dumps({"pid": os.getpid(), "built_in": getattr(request.config, BUILT_IN, None),
                              "dir": str(request.config.invocation_params.dir),
                              "args": list(request.config.invocation_params.args)}) + "\\n")
'''


def _run(repo: Path, gate: str) -> dict:
    proc = subprocess.run(["gates", "run", "--root", str(repo), "--json", gate], capture_output=True, text=True,
                          timeout=300)
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "GREEN", (item, proc.stderr)
    return item


def test_the_fork_runs_with_the_config_the_warm_process_built(repo: Path, monkeypatch):
    log = repo.parent / "pre.log"
    monkeypatch.setenv("PRE_LOG", str(log))
    write(repo, "tests/test_pre.py", RECORDING_TEST)
    write(repo, "gates/pre.yaml", "gate: pre\ndriver:\n  type: pytest-warm\n  run: [tests/test_pre.py]\n")
    _run(repo, "pre")
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    # built in another process (the warm one), used in the fork, with the fork's own invocation
    assert seen["built_in"] is not None and seen["built_in"] != seen["pid"]
    assert Path(seen["dir"]).resolve() == repo.resolve()
    assert "tests/test_pre.py" in seen["args"]


def test_a_p_argument_makes_the_fork_build_its_own(repo: Path, monkeypatch):
    log = repo.parent / "pre.log"
    monkeypatch.setenv("PRE_LOG", str(log))
    write(repo, "tests/test_pre.py", RECORDING_TEST)
    write(repo, "gates/pre.yaml", "gate: pre\ndriver:\n  type: pytest-warm\n"
                                  "  run: [-p, no:doctest, tests/test_pre.py]\n")
    _run(repo, "pre")
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen["built_in"] is None


def test_usable_only_where_the_variables_read_while_building_are_the_same(monkeypatch):
    _get_config_of_pytest_9_0(monkeypatch)
    monkeypatch.setenv("TOX_ENV_DIR", "/tmp/tox-a")
    built = Prebuilt.build()
    assert built is not None
    assert "TOX_ENV_DIR" in built.read      # pytest's cache plugin reads it while registering
    env = dict(os.environ)
    assert built.usable(["-q", "t.py"], env)
    assert not built.usable(["-q", "t.py"], {**env, "TOX_ENV_DIR": "/tmp/tox-b"})
    assert not built.usable(["-q", "t.py"], {k: v for k, v in env.items() if k != "TOX_ENV_DIR"})
    assert not built.usable(["-p", "no:cacheprovider", "t.py"], env)
    assert not built.usable(["-pno:cacheprovider", "t.py"], env)


def _get_config_taking_prog(monkeypatch):
    """pytest 9.2's shape, `get_config(args, plugins, *, prog)`, over whichever pytest is installed."""
    import inspect

    import _pytest.config

    original = _pytest.config.get_config
    takes_prog = "prog" in inspect.signature(original).parameters

    def get_config(args=None, plugins=None, *, prog=None):
        return original(args, plugins, prog=prog) if takes_prog else original(args, plugins)

    monkeypatch.setattr(_pytest.config, "get_config", get_config)


def test_a_get_config_with_parameters_the_prebuilt_does_not_know_is_not_prebuilt(monkeypatch):
    import _pytest.config

    original = _pytest.config.get_config

    def get_config(args=None, plugins=None, *, color=None):     # a shape no pytest has had
        return original(args, plugins)

    monkeypatch.setattr(_pytest.config, "get_config", get_config)
    assert Prebuilt.build() is None


def test_pytest_9_2_s_prog_keyword_is_built_with_and_handed_over_for_that_call_alone(monkeypatch):
    # pytest 9.2's pytest.main calls get_config(args, plugins, prog="pytest.main()")
    import _pytest.config

    from redfirst.gates.drivers.pytest_warm.preconfig import BUILT_IN

    _get_config_taking_prog(monkeypatch)
    built = Prebuilt.build()
    assert built is not None and built.extra == {"prog": "pytest.main()"}
    built.install()
    assert getattr(_pytest.config.get_config(["-q"], None, prog="pytest.main()"), BUILT_IN, None) is not None
    built.install()
    assert getattr(_pytest.config.get_config(["-q"], None, prog="other"), BUILT_IN, None) is None


def test_an_installed_prebuilt_called_with_unknown_keywords_gives_pytest_s_own_config(monkeypatch):
    import _pytest.config

    from redfirst.gates.drivers.pytest_warm.preconfig import BUILT_IN

    prebuilt = Prebuilt(_pytest.config.get_config(None), {})
    setattr(prebuilt.config, BUILT_IN, 1)
    _get_config_taking_prog(monkeypatch)
    prebuilt.install()
    config = _pytest.config.get_config(["-q"], None, prog="pytest.main()")
    assert getattr(config, BUILT_IN, None) is None


def _get_config_of_pytest_9_0(monkeypatch):
    """`get_config(args, plugins)`, the shape a prebuilt is made for, over whichever pytest is installed."""
    import _pytest.config

    original = _pytest.config.get_config

    def get_config(args=None, plugins=None):
        return original(args, plugins)

    monkeypatch.setattr(_pytest.config, "get_config", get_config)
