"""The simulated rank backend (`ranks: {backend: sim}`): a CPU stand-in for a device, torch-free.

A rank's "stream" runs host work eagerly, or, while captured, records each launch as a
closure that a replay re-executes (as examples/seam's sim backend does); collectives move
real bytes between rank processes through the launcher's loopback store
(redfirst.gates.cuda.store). A factory gets a `SimGroup` and queues its work on the stream:

    def build(variant, shape, group):            # group.rank, group.world_size, group.tp_size
        return MyStep(...)                        # inputs(seed, stream), __call__(stream), outputs()

    # inside __call__(stream):
    stream.launch(lambda: np.matmul(x, w, out=y))
    group.all_reduce(y, stream)                   # logged (op, size, dtype), exchanged when it runs

Every collective issued is logged with whether a capture was open, so the grader can
compare the ranks' sequences. A rank that has run its arms says so (`leave`): a peer waiting on a
collective it never issued (it skipped the step as not applicable) fails that collective at once,
instead of waiting for the deadline and being named as hung. Making or destroying a process group while a capture is open
raises `GroupInCapture`: a graph cannot own a process group.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from redfirst.gates.cuda.store import Client

LEFT_POLL = 0.2   # seconds between looks at whether a peer has left, while waiting on its part
GROUP_IN_CAPTURE = "a process group was created or destroyed inside the captured callable"


class GroupInCapture(RuntimeError):
    """A process group made or destroyed while the step was being captured."""


class CollectiveMismatch(RuntimeError):
    """The ranks issued different collectives at the same position: they would hang or mix data."""


class SimStream:
    """A host 'stream': `launch(fn)` runs fn now, or records it while a capture is open."""

    def __init__(self) -> None:
        self.recording: list[Callable[[], None]] | None = None

    def launch(self, fn: Callable[[], None]) -> None:
        if self.recording is not None:
            self.recording.append(fn)
        else:
            fn()

    @property
    def capturing(self) -> bool:
        return self.recording is not None


class SimGraph:
    """The launches one call of `work` recorded; `launch` re-executes them in order."""

    def __init__(self, stream: SimStream, work: Callable[[SimStream], None]) -> None:
        stream.recording = []
        try:
            work(stream)
            self.ops = stream.recording
        finally:
            stream.recording = None
        self.nodes = len(self.ops)

    def launch(self, stream: SimStream) -> None:
        for op in self.ops:
            op()


class SimGroup:
    """One rank's view of the group: collectives over the store, logged as issued."""

    backend = "sim"

    def __init__(self, rank: int, world_size: int, tp_size: int, client: Client, timeout: float,
                 progress: Callable[[str], None] = lambda phase: None, dtype: str = "float32") -> None:
        self.rank, self.world_size, self.tp_size, self.dtype = rank, world_size, tp_size, dtype
        self.client, self.timeout, self.progress = client, timeout, progress
        self.log: list[dict[str, Any]] = []
        self.executed = 0
        self.outputs: Mapping[str, np.ndarray[Any, Any]] = {}   # the step's outputs, by name (set by the arm)

    def _issue(self, op: str, array: np.ndarray[Any, Any], stream: SimStream) -> None:
        # which of the step's outputs the collective writes (None: an intermediate buffer): two of the same size
        # and dtype in another order on one rank differ here, not in op, size or dtype
        output = next((n for n, o in self.outputs.items() if np.shares_memory(o, array)), None)
        self.log.append({"op": op, "size": int(array.size), "dtype": str(array.dtype), "output": output,
                         "capturing": stream.capturing})

    def all_reduce(self, array: np.ndarray[Any, Any], stream: SimStream) -> None:
        """Sum `array` over the ranks in place (in rank order: the same bits on every rank)."""
        self._issue("all_reduce", array, stream)
        stream.launch(lambda: self._exchange("all_reduce", array))

    def new_group(self, stream: SimStream) -> None:
        """Make a process group: allowed eagerly, GroupInCapture while captured."""
        if stream.capturing:
            raise GroupInCapture(GROUP_IN_CAPTURE + " (new_group)")

    def destroy_group(self, stream: SimStream) -> None:
        if stream.capturing:
            raise GroupInCapture(GROUP_IN_CAPTURE + " (destroy_process_group)")

    def scratch(self, n: int) -> np.ndarray[Any, Any]:
        """A zeroed buffer of n values in the group's dtype (the hazards' extra collectives)."""
        return np.zeros(n, dtype=np.dtype(self.dtype))

    def host_write(self, array: np.ndarray[Any, Any], value: int, stream: SimStream) -> None:
        """Queue a write of the host byte `value` into the first byte of `array` (frozen by a capture)."""
        def write() -> None:
            first_bytes(array)[0] = value     # into the output's own bytes (reshape(-1) copies a strided one)
        stream.launch(write)

    def _exchange(self, op: str, array: np.ndarray[Any, Any]) -> None:
        n = self.executed
        self.executed += 1
        head = f"{op} {array.size} {array.dtype}"
        self.client.set(f"x/{n}/{self.rank}", head.encode() + b"\n" + np.ascontiguousarray(array).tobytes())
        self.progress(f"collective {n} wait")
        parts = []
        for r in range(self.world_size):
            their_head, _, data = self._receive(n, r).partition(b"\n")
            if their_head.decode() != head:
                raise CollectiveMismatch(f"collective {n}: rank {self.rank} issued {head}, rank {r} "
                                         f"{their_head.decode()}")
            parts.append(np.frombuffer(data, dtype=array.dtype).reshape(array.shape))
        self.progress(f"collective {n} done")
        total = parts[0].copy()
        for p in parts[1:]:
            total += p
        array[...] = total


    def _receive(self, n: int, r: int) -> bytes:
        """Rank r's part of collective n; CollectiveMismatch as soon as rank r has left (`leave`) without
        issuing it (it skipped the step, or issued fewer collectives), StoreTimeout after `timeout`."""
        from redfirst.gates.cuda.store import StoreTimeout

        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self.client.get(f"x/{n}/{r}", min(LEFT_POLL, max(0.0, deadline - time.monotonic())))
            except StoreTimeout:
                if r != self.rank and self._has(f"left/{r}"):
                    raise CollectiveMismatch(f"collective {n}: rank {r} has left without issuing it") from None
                if time.monotonic() >= deadline:
                    raise

    def _has(self, key: str) -> bool:
        from redfirst.gates.cuda.store import StoreTimeout

        try:
            self.client.get(key, 0.0)
            return True
        except StoreTimeout:
            return False

    def leave(self) -> None:
        """Say this rank issues no more collectives: a peer waiting on one from it stops waiting."""
        self.client.set(f"left/{self.rank}", b"1")


def device(rank: int) -> dict[str, Any]:
    """The simulated device's identity: one per rank, by rank and process."""
    return {"name": "redfirst-sim", "uuid": f"sim-rank-{rank}", "compute_capability": "sim",
            "pid": os.getpid()}


def first_bytes(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The bytes of `array`'s first element, as a writable view into `array` itself, whatever its strides
    (a reshaped or byte view of a strided output would be a copy, or refused)."""
    first = array.reshape(1) if array.ndim == 0 else array[(slice(0, 1),) * array.ndim]
    view: np.ndarray[Any, Any] = first.view(np.uint8).reshape(-1)
    if not np.shares_memory(view, array):
        raise ValueError("cannot view the first element of the output in place")
    return view


def poison(outs: Mapping[str, np.ndarray[Any, Any]], byte: int) -> None:
    """Every byte of every output set to `byte`, in place, whatever the output's strides: the poisoning is
    the harness's own work, so an output laid out in any order must not make it fail (that read as the
    step failing eagerly: a RED for redfirst's error)."""
    for a in outs.values():
        a[...] = np.frombuffer(bytes([byte]) * a.dtype.itemsize, dtype=a.dtype)[0]
