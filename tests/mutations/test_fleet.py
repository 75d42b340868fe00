"""`mutate --lease auto -n N` and `mutate --slurm -n N`: one lease per worker, results streamed back,
a worker lost with its lease re-queued once and then no decision; on the private single-node Slurm
with two GPU GRES slots (redfirst.leases.minislurm) and on the local lease backend, with real gates (pytest)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mutate_helpers import git, mutate, write

from redfirst.leases import minislurm
from redfirst.verdict import exit_code

MUTATIONS = '''\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a - b"
  expect: {red: [add], green: [sub]}
- mutation: clamp-hi
  file: calc/__init__.py
  anchor: "        return hi\\n"
  replace: "        return hi + 1\\n"
  expect: {red: [clamp]}
- mutation: sub-plus
  file: calc/__init__.py
  anchor: "return a - b"
  replace: "return a + b"
  expect: {red: [sub], green: [add]}
'''

# Each gate's test notes where it ran (the GPU slot it was given, its Slurm job) in $FLEET_MARKS; the
# add test under its mutation (add(2, 3) != 5) says so in the note's name and, with $FLEET_HOLD set,
# waits there (until $FLEET_MARKS/.go exists), so that a test can cancel the job of the worker running it.
NOTE = '''\
import os
import time
from pathlib import Path


def note(name, hold=False):
    marks = os.environ.get("FLEET_MARKS")
    if marks:
        Path(marks, f"{name}-{os.getpid()}-{time.monotonic_ns()}").write_text(
            f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')} {os.environ.get('SLURM_JOB_ID', '')}")
    end = time.monotonic() + float(os.environ.get("FLEET_HOLD") or 0)
    while hold and marks and time.monotonic() < end and not Path(marks, ".go").exists():
        time.sleep(0.05)
'''

TEST_ADD = '''\
from calc import add
from calc.fleetnote import note


def test_add():
    got = add(2, 3)
    note("add-mutated" if got != 5 else "add", hold=got != 5)
    assert got == 5
'''

TEST_SUB = '''\
from calc import sub
from calc.fleetnote import note


def test_sub():
    note("sub")
    assert sub(5, 3) == 2
'''

TEST_CLAMP = '''\
from calc import clamp
from calc.fleetnote import note


def test_clamp_inside():
    note("clamp")
    assert clamp(5, 0, 10) == 5
'''


def _gate(gate_id: str, test: str, gpus: int) -> str:
    return (f"gate: {gate_id}\nrequires: {{gpus: {gpus}}}\ndriver:\n  type: pytest\n  run: [{test}]\n"
            "  timeout: 120\n")


@pytest.fixture
def fleet_repo(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The calc repository with gates that each need one GPU, and three mutations: KILLED (with a
    control), SURVIVED, KILLED (with a control)."""
    write(repo, "calc/fleetnote.py", NOTE)
    write(repo, "tests/test_add.py", TEST_ADD)
    write(repo, "tests/test_sub.py", TEST_SUB)
    write(repo, "tests/test_clamp.py", TEST_CLAMP)
    for g in ("add", "sub", "clamp"):
        write(repo, f"gates/{g}.yaml", _gate(g, f"tests/test_{g}.py", 1))
    (repo / "gates" / "compiles.yaml").unlink()
    write(repo, "mutations/m.yaml", MUTATIONS)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fleet fixture")
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("FLEET_MARKS", str(marks))
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "state" / "leases.db"))
    monkeypatch.setenv("REDFIRST_LOCK_DIR", str(tmp_path / "machine-locks"))
    return repo


def _require(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} (CI is set, so this is a failure, not a skip)")
    pytest.skip(what)


@pytest.fixture(scope="module")
def two_gpu_slurm() -> Iterator[minislurm.Cluster]:
    """A private single-node Slurm on loopback whose node has two GPU GRES slots."""
    missing = minislurm.missing_commands()
    if missing:
        _require(f"Slurm/munge is not installed ({', '.join(missing)} not found)")
    if os.geteuid() != 0:
        _require("the private test Slurm needs root")
    try:
        with minislurm.private("fleet", rest=False, gpus=2) as cluster:
            yield cluster
    except minislurm.LeftRunning:
        raise
    except minislurm.ClusterError as exc:
        _require(f"the private test Slurm did not start: {exc}")


def _doc(proc: subprocess.CompletedProcess[str]) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _outcomes(doc: dict) -> dict[str, str]:
    return {i["id"]: i["verdict"] for i in doc["items"]}


def _notes(marks: Path) -> list[tuple[str, str, str]]:
    """(name, CUDA_VISIBLE_DEVICES, Slurm job) of every gate test that ran."""
    out = []
    for f in marks.iterdir():
        if f.name.startswith("."):
            continue
        cvd, _, job = f.read_text().partition(" ")
        out.append((f.name.split("-")[0] + ("-mutated" if "-mutated-" in f.name else ""), cvd, job))
    return out


class Canceller:
    """Cancels the Slurm job of each worker that runs the add mutation's gate (at most `times` jobs)."""

    def __init__(self, marks: Path, times: int) -> None:
        self.marks, self.times = marks, times
        self.cancelled: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Canceller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(0.1) and len(self.cancelled) < self.times:
            for name, _, job in _notes(self.marks):
                if name == "add-mutated" and job and job not in self.cancelled:
                    subprocess.run(["scancel", job], check=True, capture_output=True)
                    self.cancelled.append(job)
                    if len(self.cancelled) == self.times:
                        (self.marks / ".go").touch()     # the next run of the add mutation goes through


def _slurm_audit() -> list:
    from redfirst.leases.backends.slurm import SlurmBackend
    from redfirst.leases.config import LeasesConfig

    return SlurmBackend(LeasesConfig()).audit(1000)


# -- Slurm ---------------------------------------------------------------------------------------
def test_slurm_two_workers_give_the_local_outcomes_on_two_gpu_slots(fleet_repo: Path, two_gpu_slurm) -> None:
    marks = Path(os.environ["FLEET_MARKS"])
    local = mutate(fleet_repo, "-n", "2", "--json", "--no-cache")
    assert _outcomes(_doc(local)) == {"add-minus": "KILLED", "clamp-hi": "SURVIVED", "sub-plus": "KILLED"}, local.stderr
    for f in marks.iterdir():
        f.unlink()
    proc = mutate(fleet_repo, "--slurm", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert _outcomes(doc) == _outcomes(_doc(local)), proc.stderr
    assert proc.returncode == local.returncode == 1     # a survivor
    leases = {i["lease"]["lease_id"]: i["lease"] for i in doc["items"]}
    assert len(leases) == 2, leases
    assert {f["backend"] for f in leases.values()} == {"slurm"}
    # The two workers held different GPU slots: as each worker saw it, and as each gate's test saw it.
    assert sorted(f["cuda_visible_devices"] for f in leases.values()) == ["0", "1"]
    by_job: dict[str, set[str]] = {}
    for _, cvd, job in _notes(marks):
        by_job.setdefault(job, set()).add(cvd)
    assert set(by_job) == set(leases) and all(len(v) == 1 for v in by_job.values()), by_job
    assert {leases[j]["cuda_visible_devices"] for j in by_job} == {"0", "1"}
    assert all(by_job[j] == {leases[j]["cuda_visible_devices"]} for j in by_job)
    # The audit shows the two leases held at the same time, each on its own slot.
    events = [e for e in _slurm_audit() if e.lease_id in leases]
    spans = {lid: (min(e.at for e in events if e.lease_id == lid and e.event == "grant"),
                   max(e.at for e in events if e.lease_id == lid and e.event == "release")) for lid in leases}
    (a, (a0, a1)), (b, (b0, b1)) = spans.items()
    assert a0 < b1 and b0 < a1, spans
    assert leases[a]["cuda_visible_devices"] != leases[b]["cuda_visible_devices"]
    assert not minislurm.steps_of(two_gpu_slurm.prefix) or _squeue() == []


def _squeue() -> list[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True).stdout
    return out.split()


def test_a_worker_whose_job_is_cancelled_is_requeued_once_to_another(fleet_repo: Path, two_gpu_slurm,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_HOLD", "30")
    with Canceller(Path(os.environ["FLEET_MARKS"]), times=1) as c:
        proc = mutate(fleet_repo, "--slurm", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert _outcomes(doc) == {"add-minus": "KILLED", "clamp-hi": "SURVIVED", "sub-plus": "KILLED"}, proc.stderr
    assert len(c.cancelled) == 1
    item = next(i for i in doc["items"] if i["id"] == "add-minus")
    assert item["lease"]["attempt"] == 2 and item["lease"]["lease_id"] != c.cancelled[0], item["lease"]
    assert _squeue() == []


def test_a_worker_lost_twice_is_no_decision_naming_the_lost_leases(fleet_repo: Path, two_gpu_slurm,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_HOLD", "30")
    with Canceller(Path(os.environ["FLEET_MARKS"]), times=2) as c:
        proc = mutate(fleet_repo, "--slurm", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert len(c.cancelled) == 2
    assert proc.returncode == exit_code(list(_outcomes(doc).values())), proc.stderr
    item = next(i for i in doc["items"] if i["id"] == "add-minus")
    assert item["verdict"] == "DISCARDED" and item["cause"] == "environment", item
    assert "lost twice" in item["reason"] and all(f"lease {job}" in item["reason"] for job in c.cancelled), item
    assert item["gates"] == [] and item["controls"] == []
    assert _outcomes(doc)["clamp-hi"] == "SURVIVED"     # the other worker's
    assert _squeue() == []


def test_results_streamed_back_survive_a_killed_client(fleet_repo: Path, two_gpu_slurm,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The client is killed while the add mutation's worker holds: what had finished is kept, and the
    next run reuses it (only the unfinished mutation runs again)."""
    monkeypatch.setenv("FLEET_HOLD", "600")
    marks = Path(os.environ["FLEET_MARKS"])
    client = subprocess.Popen(["mutate", "--root", str(fleet_repo), "--slurm", "-n", "2", "--json"], cwd=fleet_repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        end = time.monotonic() + 240
        while time.monotonic() < end and not _cached_ids(fleet_repo):
            time.sleep(0.2)
        while time.monotonic() < end and not any(n == "add-mutated" for n, _, _ in _notes(marks)):
            time.sleep(0.2)
    finally:
        os.killpg(client.pid, 9)
        _, said = client.communicate()
    kept = _cached_ids(fleet_repo)
    assert kept and "add-minus" not in kept, f"ran: {_notes(marks)}; the client said: {said[-4000:]}"
    # The next run inherits the same environment (the cache keys on it): the hold ends by the file.
    (marks / ".go").touch()
    deadline = time.monotonic() + 120
    while _squeue() and time.monotonic() < deadline:      # the dead client's jobs end by its watchdog
        time.sleep(0.5)
    proc = mutate(fleet_repo, "--slurm", "-n", "2", "--json")
    doc = _doc(proc)
    assert _outcomes(doc) == {"add-minus": "KILLED", "clamp-hi": "SURVIVED", "sub-plus": "KILLED"}, proc.stderr
    assert {i["id"] for i in doc["items"] if i["cached"]} == kept


def _cached_ids(root: Path) -> set[str]:
    """Ids whose results the cache holds now (as `mutate` reads them: a dry look-up per mutation)."""
    from redfirst.gates.config import load_project
    from redfirst.gates.loader import load_gates
    from redfirst.gates.treekey import TreeState
    from redfirst.mutations import cache
    from redfirst.mutations.loader import mutation_paths
    from redfirst.mutations.selection import select

    project = load_project(root)
    found = set()
    tree = TreeState.of(root, (*mutation_paths(project), root / ".redfirst"))
    docs = {g.id: g.document for g in load_gates(project)}
    for m in select(project, [], root):
        k = cache.key(m, (root / m.file).read_bytes(), (docs[g] for g in m.expect.gates), tree)
        if cache.load(k, tree) is not None:
            found.add(m.id)
    return found


# -- the local lease backend ---------------------------------------------------------------------
def test_a_lease_no_box_can_give_is_no_decision_naming_why(fleet_repo: Path) -> None:
    write(fleet_repo, "gates/add.yaml", _gate("add", "tests/test_add.py", 64))
    proc = mutate(fleet_repo, "--lease", "auto", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert proc.returncode == 3, proc.stderr
    assert {i["verdict"] for i in doc["items"]} == {"DISCARDED"}
    assert all("gpus>=64" in i["reason"] for i in doc["items"]), doc["items"]


def test_local_leased_workers_give_the_local_outcomes(fleet_repo: Path) -> None:
    for g in ("add", "sub", "clamp"):
        write(fleet_repo, f"gates/{g}.yaml", _gate(g, f"tests/test_{g}.py", 0))
    proc = mutate(fleet_repo, "--lease", "auto", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert _outcomes(doc) == {"add-minus": "KILLED", "clamp-hi": "SURVIVED", "sub-plus": "KILLED"}, proc.stderr
    assert {i["lease"]["backend"] for i in doc["items"]} == {"local"}
    assert len({i["lease"]["lease_id"] for i in doc["items"]}) == 2


def _local_fleet_run(repo: Path, monkeypatch: pytest.MonkeyPatch,
                     tick: Callable[[Any, Path, list[str]], bool]) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`mutate --lease auto -n 1` over CPU gates whose tests hold (FLEET_HOLD) until `.go`, while `tick(backend,
    marks, released)` runs every 0.1 s beside it until it returns True: what ends or edits under the worker."""
    from redfirst.leases.backends.local import LocalBackend
    from redfirst.leases.config import LeasesConfig

    for g in ("add", "sub", "clamp"):
        write(repo, f"gates/{g}.yaml", _gate(g, f"tests/test_{g}.py", 0))
    monkeypatch.setenv("FLEET_HOLD", "30")
    marks = Path(os.environ["FLEET_MARKS"])
    backend = LocalBackend(LeasesConfig())
    released: list[str] = []
    stop = threading.Event()

    def beside() -> None:
        while not stop.wait(0.1) and not tick(backend, marks, released):
            pass

    t = threading.Thread(target=beside, daemon=True)
    t.start()
    try:
        return mutate(repo, "--lease", "auto", "-n", "1", "--json", "--no-cache"), released
    finally:
        stop.set()
        t.join()


def test_a_local_lease_released_under_the_worker_is_requeued_then_no_decision(fleet_repo: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The fence: the lease ended by someone else (as `leases release` does) stops its worker; its
    mutations go to another worker once, and a second loss is no decision, never a kill."""
    def release_holders(backend: Any, marks: Path, released: list[str]) -> bool:
        if sum(1 for n, _, _ in _notes(marks) if n == "add-mutated") > len(released):
            for lease in [lease for lease in backend.status() if lease.id not in released]:
                backend.release(lease.id)
                released.append(lease.id)
            if len(released) >= 2:
                (marks / ".go").touch()
        return len(released) >= 2

    proc, released = _local_fleet_run(fleet_repo, monkeypatch, release_holders)
    doc = _doc(proc)
    assert len(released) == 2
    assert proc.returncode == 3, proc.stderr
    item = next(i for i in doc["items"] if i["id"] == "add-minus")
    assert item["verdict"] == "DISCARDED" and "lost twice" in item["reason"], item
    assert all(lid in item["reason"] for lid in released), item["reason"]
    assert "KILLED" not in {i["verdict"] for i in doc["items"] if i["id"] in ("add-minus", "sub-plus")}


def test_slurm_that_cannot_be_reached_is_no_decision_never_a_traceback(fleet_repo: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "no-such-slurm.conf"))
    proc = mutate(fleet_repo, "--slurm", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert proc.returncode == 3, proc.stderr
    assert {i["verdict"] for i in doc["items"]} == {"DISCARDED"}
    assert all("no lease for the workers (slurm:auto)" in i["reason"] for i in doc["items"]), doc["items"]


@pytest.mark.parametrize("args", [["--lease", "auto", "--slurm"], ["--slurm", "--shard", "1/2"],
                                  ["--slurm", "-n", "0"],
                                  ["--slurm", "--file", "calc/__init__.py", "--anchor", "a + b", "--replace", "a",
                                   "--gate", "add"]])
def test_fleet_flags_that_contradict_are_a_usage_error(fleet_repo: Path, args: list[str]) -> None:
    proc = mutate(fleet_repo, *args, "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("mutate: ")


def test_cuda_gates_run_on_the_workers_slot_without_leasing_again(fleet_repo: Path, two_gpu_slurm) -> None:
    """A `device: cuda` gate inside a worker runs on the GPU the worker's lease holds: it takes no second,
    local lease (which on this machine, with no GPU of its own, could never be had)."""
    for g in ("add", "sub", "clamp"):
        write(fleet_repo, f"gates/{g}.yaml", _gate(g, f"tests/test_{g}.py", 1).replace(
            "requires: {gpus: 1}", "requires: {device: cuda}"))
    proc = mutate(fleet_repo, "--slurm", "-n", "2", "--json", "--no-cache")
    doc = _doc(proc)
    assert _outcomes(doc) == {"add-minus": "KILLED", "clamp-hi": "SURVIVED", "sub-plus": "KILLED"}, proc.stderr
    seen = {job: cvd for _, cvd, job in _notes(Path(os.environ["FLEET_MARKS"]))}
    assert {i["lease"]["lease_id"]: i["lease"]["cuda_visible_devices"] for i in doc["items"]} == seen


# clamp-hi rewritten into a mutation its gate (now add) kills.
CLAMP_HI_REWRITTEN = MUTATIONS.replace('  anchor: "        return hi\\n"\n  replace: "        return hi + 1\\n"\n'
                                       '  expect: {red: [clamp]}',
                                       '  anchor: "return a + b"\n  replace: "return a * b"\n  expect: {red: [add]}')


@pytest.mark.parametrize("edit", ["test", "mutation"])
def test_a_requeued_worker_that_finds_another_tree_decides_nothing(fleet_repo: Path, edit: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The tree (a test, or the mutation file) is edited while the first worker holds (its workspace
    already made), then its lease is lost: the worker its share is re-queued to would run on the edited
    tree, where clamp-hi is killed. That is not a result for the tree and mutation this run keys and
    proves: no decision naming it, never KILLED."""
    def edit_then_release(backend: Any, marks: Path, released: list[str]) -> bool:
        if not any(n == "add-mutated" for n, _, _ in _notes(marks)):
            return False
        if edit == "test":
            (fleet_repo / "tests" / "test_clamp.py").write_text(
                TEST_CLAMP + "\n\ndef test_clamp_top():\n    assert clamp(20, 0, 10) == 10\n")
        else:
            (fleet_repo / "mutations" / "m.yaml").write_text(CLAMP_HI_REWRITTEN)
        for lease in backend.status():
            backend.release(lease.id)
            released.append(lease.id)
        (marks / ".go").touch()
        return True

    for g in ("add", "sub", "clamp"):     # committed: the edit under the worker is the tree's only change
        write(fleet_repo, f"gates/{g}.yaml", _gate(g, f"tests/test_{g}.py", 0))
    git(fleet_repo, "commit", "-q", "-am", "cpu gates")
    proc, released = _local_fleet_run(fleet_repo, monkeypatch, edit_then_release)
    doc = _doc(proc)
    assert len(released) == 1
    outcomes = _outcomes(doc)
    assert outcomes["clamp-hi"] != "KILLED", (outcomes, proc.stderr)
    item = next(i for i in doc["items"] if i["id"] == "clamp-hi")
    assert item["verdict"] in ("SURVIVED", "DISCARDED"), item
    if item["verdict"] == "DISCARDED":
        assert ("tree" if edit == "test" else "mutation documents") in item["reason"], item
