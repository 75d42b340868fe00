"""`redfirst/gates/api.py` is the gate engine's one typed entry point: mutations hand it a frozen
`GateRequest` and get the run through a `GateRunner` (its `start` runs the programs now and
returns what grades them later). Real git projects, real gate runs."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from redfirst.gates import api
from redfirst.verdict import Cause, MutationOutcome, Verdict

REPO = Path(__file__).resolve().parents[2]
# The gate engine's insides: mutations reach them only through redfirst.gates.api.
ENGINE_MODULES = frozenset({"redfirst.gates.runner", "redfirst.gates.loader", "redfirst.gates.store", "redfirst.gates.grade"})


@pytest.fixture
def project(make_project) -> Path:
    return make_project()


def test_a_gate_request_is_frozen(tmp_path: Path):
    request = api.GateRequest(tmp_path, ("a",), tmp_path / ".redfirst")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.skip_build = True  # type: ignore[misc]
    assert (request.skip_build, request.mutated) == (False, None)


def test_the_engine_runner_runs_the_programs_at_start_and_grades_at_finish(project: Path):
    runner = api.EngineRunner()
    assert isinstance(runner, api.GateRunner)
    calls = []
    finish = runner.start(api.GateRequest(project, ("value-check",), project / ".redfirst"), lambda: calls.append(1))
    assert calls == [1]                    # called once, while the program ran
    (project / "value.txt").write_text("bad\n")   # grading reads the run folder, not the tree
    [result] = finish()
    assert (result.gate_id, result.verdict) == ("value-check", Verdict.GREEN)
    assert result.evidence_id and (project / ".redfirst" / "evidence" / result.evidence_id).is_dir()
    [red] = runner.run(api.GateRequest(project, ("value-check",), project / ".redfirst", mutated="worktree"))
    assert (red.verdict, red.cause) == (Verdict.RED, Cause.EXIT)


def test_each_run_is_told_the_gate_the_caller_runs_next_on_its_tree(make_project, monkeypatch):
    # GateRequest.then: the next gate of the request, else the caller's next; a driver that keeps
    # a process warm collects that one ahead (pytest-warm's standby). Only a guess: no verdict uses it.
    from redfirst.gates import drivers

    again = "gate: {}\ndriver: {{type: command, run: \"echo '1 passed, 0 failed'\", format: plain}}\n"
    root = make_project({"g2.yaml": again.format("second"), "g3.yaml": again.format("third")})
    told: list[tuple[str, str]] = []
    real = drivers.get

    def recording(name: str) -> drivers.Driver:
        driver = real(name)

        class Told(type(driver)):  # type: ignore[misc]
            def ahead(self, inv, gate, then, root, brief=False, edit=None):
                told.append((gate.id, then.id, edit))
                return super().ahead(inv, gate, then, root, brief, edit)

        return Told()

    monkeypatch.setattr(drivers, "get", recording)
    runner = api.EngineRunner()
    results = runner.run(api.GateRequest(root, ("value-check", "second"), root / ".redfirst", then=("third",),
                                         then_edit=("value.txt", b"edited\n")))
    assert [r.verdict for r in results] == [Verdict.GREEN, Verdict.GREEN]
    # (the edit is the tree's after the request's gates: the last one is told it)
    assert told == [("value-check", "second", None), ("second", "third", ("value.txt", b"edited\n"))]
    told.clear()
    runner.run(api.GateRequest(root, ("third",), root / ".redfirst"))
    assert told == []          # nothing named next: nothing told


def test_an_unknown_gate_in_a_request_is_a_load_error(project: Path):
    with pytest.raises(api.LoadError, match="no-such"):
        api.EngineRunner().start(api.GateRequest(project, ("no-such",), project / ".redfirst"))


def test_mutations_reach_the_gate_engine_only_through_gates_api():
    found = []
    for path in sorted((REPO / "redfirst" / "mutations").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module == "redfirst.gates":
                names = [f"redfirst.gates.{a.name}" for a in node.names]
            found += [f"{path.relative_to(REPO)}:{node.lineno}: {n}" for n in names if n in ENGINE_MODULES]
    assert not found, "mutations/ imports the gate engine's insides (use redfirst.gates.api):\n" + "\n".join(found)


class Recording:
    """The real engine runner, recording each request the mutation engine hands it."""

    def __init__(self) -> None:
        self.inner = api.EngineRunner()
        self.requests: list[api.GateRequest] = []

    def start(self, request, while_running=None):
        self.requests.append(request)
        return self.inner.start(request, while_running)


def test_the_mutation_engine_runs_its_gates_through_a_gate_request(project: Path):
    from redfirst.gates.model import Source
    from redfirst.mutations.engine import Engine
    from redfirst.mutations.model import Expect, Mutation

    runner = Recording()
    gates = {g.id: g for g in api.load_gates(project)}
    m = Mutation(id="m", file="value.txt", anchor="good", replace="bad", source=Source(Path("m.yaml"), 1),
                 expect=Expect(build="ok", red=("value-check",), green=()), build=None, mode="worktree",
                 document="m")
    worse = dataclasses.replace(m, id="m2", replace="worse")
    original = (project / "value.txt").read_bytes()
    results = Engine(project, gates, runner=runner, use_cache=False, prove=False).run([m, worse])
    assert [r.outcome for r in results] == [MutationOutcome.KILLED] * 2, [r.reason for r in results]
    assert [(r.gate_ids, r.skip_build, r.mutated) for r in runner.requests] == [
        (("value-check",), False, None), (("value-check",), False, "worktree"), (("value-check",), False, "worktree")]
    # the first mutation's run is told the file the next one edits, as it will be (a guess a
    # driver may work ahead on); the last is told nothing
    assert [r.then_edit for r in runner.requests[1:]] == [("value.txt", original.replace(b"good", b"worse")), None]


@pytest.mark.parametrize("driver", ["pytest", "pytest-warm"])
def test_a_mutated_runs_pytest_cache_is_its_own_and_is_removed_once_graded(make_project, monkeypatch, driver):
    # Under a mutation pytest keeps its cache in a folder of the run's own (never the user's
    # last-failed list): removed once the run is graded, which overlaps the next run, not left
    # for the end (a thousand such folders took a quarter of a second to remove there).
    from redfirst.gates.drivers import pytest as pytest_driver
    from redfirst.gates.drivers.pytest_warm import driver as warm_driver

    made: list[str] = []

    def recorded() -> str:
        made.append(real())
        return made[-1]

    real = pytest_driver.private_cache
    monkeypatch.setattr(pytest_driver, "private_cache", recorded)
    monkeypatch.setattr(warm_driver, "private_cache", recorded)
    gate = f"gate: t\ndriver:\n  type: {driver}\n  run: [tests/test_t.py]\n  timeout: 60\n"
    root = make_project({"t.yaml": gate})
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_t.py").write_text("def test_t(cache):\n    cache.set('t/seen', 1)\n")
    finish = api.EngineRunner().start(api.GateRequest(root, ("t",), root / ".redfirst", mutated="worktree"))
    assert len(made) == 1 and Path(made[0], "v", "t", "seen").is_file(), made     # the run's own, written
    [result] = finish()
    assert result.verdict is Verdict.GREEN, result.reason
    assert not Path(made[0]).exists()
