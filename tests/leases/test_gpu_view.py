"""A slot is one GPU for every process, whatever CUDA_VISIBLE_DEVICES that process inherited (issue #12).

`leases run` gives its wrapper (`redfirst.leases.exec`) and command `CUDA_VISIBLE_DEVICES=<the leased GPUs' UUIDs>`,
and a user's shell may set it too; CUDA then numbers the visible GPUs from 0. The subprocesses here load
tests/leases/fake_cuda, a FAKE of cuda-python (named as such: no GPU runs here) with two H200s that honours
CUDA_VISIBLE_DEVICES as the real driver does. Real `leases run` processes, real SQLite files, real flocks.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redfirst.leases import detect, procs
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseRequest, NotGranted

FAKE = Path(__file__).parent / "fake_cuda"
UUID1 = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f"


@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Two fake GPUs in this process and in every subprocess started with the returned environment."""
    import redfirst.leases.backends.local.slot_locks as local
    base = local.LOCK_BASES[0]          # the test's own machine folder base (conftest.machine_locks)
    monkeypatch.setenv("REDFIRST_FAKE_LOCK_BASE", str(base))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("REDFIRST_LEASES_DB", raising=False)
    monkeypatch.syspath_prepend(str(FAKE))
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    detect.local_gpus.cache_clear()
    yield {**os.environ, "PYTHONPATH": os.pathsep.join([str(FAKE), *filter(None, [os.environ.get("PYTHONPATH")])])}
    detect.local_gpus.cache_clear()
    for name in ("cuda", "cuda.bindings", "cuda.bindings.driver"):
        sys.modules.pop(name, None)


def test_the_command_of_a_lease_on_the_second_gpu_holds_that_gpus_lock(
        fake_gpus: dict[str, str], tmp_path: Path) -> None:
    # File b leases gpu0; its `leases run` then gets gpu1, and its wrapper runs with CUDA_VISIBLE_DEVICES=<gpu1's
    # UUID>, under which CUDA calls that GPU device 0. The wrapper must still lock gpu1's GPU, not a `gpu1.lock`
    # of no GPU: another lease file judges the slot by that lock once the holder is gone.
    b_db, a_db = tmp_path / "b" / "leases.db", tmp_path / "a" / "leases.db"
    b = LocalBackend(LeasesConfig(db=b_db))
    first = b.acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0, detached=True)
    assert first.slots == ("gpu0",)
    holder = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                               "--gpus", "1", "--ttl", "30", "--", "sh", "-c", "echo $$; exec sleep 60"],
                              env={**fake_gpus, "REDFIRST_LEASES_DB": str(b_db)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    command = None
    try:
        assert holder.stdout is not None
        command = int(holder.stdout.readline())
        lock = os.path.realpath(b.lock_path("local", "gpu1"))
        assert lock.endswith(f"{UUID1}.lock")
        assert command in procs.holders_of(lock), "the command on gpu1 does not hold gpu1's GPU lock"
        holder.send_signal(signal.SIGKILL)      # the holder dies; its command runs on, on gpu1
        holder.wait()
        a = LocalBackend(LeasesConfig(db=a_db))
        with pytest.raises(NotGranted):
            got = a.acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0.3, detached=True)
            pytest.fail(f"lease file a got {got.slots} while file b's command {command} runs on gpu1")
    finally:
        holder.kill()
        holder.wait()
        if command is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(command, signal.SIGKILL)


def test_a_shell_that_sees_only_the_second_gpu_is_never_granted_it_while_another_holds_it(
        fake_gpus: dict[str, str], tmp_path: Path) -> None:
    # One lease file; a holder that sees both GPUs holds gpu1 (`leases acquire`: no command, no lock). A shell with
    # CUDA_VISIBLE_DEVICES=1 calls that GPU gpu0: the same GPU under another slot name must still be busy.
    db = tmp_path / "leases.db"
    b = LocalBackend(LeasesConfig(db=db))
    first = b.acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0, detached=True)
    second = b.acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0, detached=True)
    b.release(first.id, first.token)
    assert b.env(second)["CUDA_VISIBLE_DEVICES"] == UUID1
    out = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "local",
                          "--gpus", "1", "--wait", "0", "--", "sh", "-c", 'echo "ran on $CUDA_VISIBLE_DEVICES"'],
                         env={**fake_gpus, "REDFIRST_LEASES_DB": str(db), "CUDA_VISIBLE_DEVICES": "1"},
                         capture_output=True, text=True, timeout=120)
    assert f"ran on {UUID1}" not in out.stdout, f"two live leases of {UUID1}: {second.id} and the shell's"
    assert [x.id for x in b.status() if UUID1 in b.env(x)["CUDA_VISIBLE_DEVICES"]] == [second.id]


def test_a_wrapper_that_cannot_find_the_leased_gpu_refuses_rather_than_lock_no_gpu(
        fake_gpus: dict[str, str], tmp_path: Path) -> None:
    # The wrapper finds the slots' GPUs again in its own process; where that finds fewer (a GPU lost from the bus, a
    # driver that fails in it), `gpu1` names no GPU there: its lock would exclude nobody on the leased GPU.
    b = LocalBackend(LeasesConfig(db=tmp_path / "leases.db"))
    b.acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0, detached=True)
    lease = b.acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0, detached=True)
    assert lease.slots == ("gpu1",)
    out = subprocess.run([*b.run_prefix(lease), "echo", "ran"], env={**fake_gpus, "REDFIRST_FAKE_GPUS": "1"},
                         capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout) == (75, ""), out.stderr
    assert f"holds {UUID1}" in out.stderr


SEES = ("from cuda.bindings import driver as d; ok = d.cuInit(0)[0] == 0; n = d.cuDeviceGetCount()[1] if ok else 0; "
        "print(' '.join(d._uuid_text(d.cuDeviceGetUuid(i)[1].bytes) for i in range(n)) or 'none')")


def test_a_declared_boxs_command_sees_none_of_this_machines_gpus(fake_gpus: dict[str, str], tmp_path: Path) -> None:
    # The local backend runs every command here. A declared box's gpu0 is not this machine's first GPU (that is the
    # `local` box's gpu0, locked by its UUID): a command on it told CUDA_VISIBLE_DEVICES=0 would use that GPU
    # while the local box's lease of it runs, one GPU leased twice.
    (tmp_path / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1, labels: {gpu_model: h200}}\n")
    db = tmp_path / "leases.db"
    held = LocalBackend(LeasesConfig(db=db)).acquire(LeaseRequest(box="local", gpus=1, ttl=600), 0, detached=True)
    assert held.slots == ("gpu0",)
    out = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(tmp_path), "run", "--box", "thor",
                          "--gpus", "1", "--", sys.executable, "-c", SEES],
                         env={**fake_gpus, "REDFIRST_LEASES_DB": str(db)}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["none"], f"thor's command uses {out.stdout.strip()} while {held.id} holds gpu0"
