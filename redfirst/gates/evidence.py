"""The evidence protocol, writing side: helpers for programs under test.

A driver runs the program with `GATES_EVIDENCE=<dir>`; the program appends one JSON
object per line to `<dir>/evidence.jsonl` (DESIGN section 2):

    {"counter": "segments_captured", "value": 29}
    {"tensor": "logits.graph", "dtype": "float32", "shape": [5, 100], "file": "logits_graph.bin", "step": 3}
    {"observation": "cuda-graph", ...}

The protocol is language-neutral; this module is the Python side of it. Without
`GATES_EVIDENCE` every helper is a no-op that returns False, so instrumented code
runs unchanged outside a gate.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ENV = "GATES_EVIDENCE"
FILE = "evidence.jsonl"

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def evidence_dir() -> Path | None:
    """The evidence folder of the running gate, or None outside a gate."""
    value = os.environ.get(ENV)
    return Path(value) if value else None


class Recorder:
    """Appends evidence lines to one folder. Each write is one `write()` of one line,
    so concurrent writers (pytest-xdist workers, threads) never interleave lines."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._tensor_files: set[str] = set()

    @property
    def active(self) -> bool:
        return self.directory is not None

    def _append(self, record: Mapping[str, Any]) -> bool:
        if self.directory is None:
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"
        with open(self.directory / FILE, "a", encoding="utf-8") as f:
            f.write(line)
        return True

    def counter(self, name: str, value: int | float) -> bool:
        """Record a named number, such as `segments_captured`."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"counter {name!r} needs a number, got {type(value).__name__}")
        return self._append({"counter": name, "value": value})

    def tensor(self, name: str, array: Any, step: int | None = None, dtype: str | None = None) -> bool:
        """Record an array's raw little-endian bytes (numpy array or anything
        `numpy.asarray` takes; a torch tensor on a device is copied to the host).

        `dtype` names the protocol dtype of bit patterns numpy cannot hold, such as a
        torch bfloat16 tensor passed as `t.view(torch.int16)` with `dtype="bfloat16"`."""
        if self.directory is None:
            return False
        import numpy as np

        if hasattr(array, "detach"):  # torch: copy to host without importing torch here
            array = array.detach().cpu().numpy()
        given = np.asarray(array)
        # ascontiguousarray alone turns a 0-dim array into shape (1,).
        data = np.ascontiguousarray(given).reshape(given.shape)
        if dtype is None:
            dtype = dtype_name(data.dtype)
        else:
            from redfirst.gates import dtypes

            width = dtypes.lookup(dtype).itemsize
            if data.dtype.itemsize != width:
                raise TypeError(f"tensor {name!r}: {data.dtype} is not {width}-byte {dtype} bit patterns")
            dtype = dtypes.lookup(dtype).name
        stem = _SAFE.sub("_", name) + ("" if step is None else f".step{step}")
        self.directory.mkdir(parents=True, exist_ok=True)
        payload = data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes()
        n = 1
        while True:
            file = f"{stem}.bin" if n == 1 else f"{stem}.{n}.bin"
            n += 1
            if file in self._tensor_files:
                continue
            try:  # exclusive create: two writers (xdist workers) never share a file name
                with open(self.directory / file, "xb") as out:
                    out.write(payload)
            except FileExistsError:
                continue
            break
        self._tensor_files.add(file)
        record: dict[str, Any] = {"tensor": name, "dtype": dtype, "shape": list(data.shape), "file": file}
        if step is not None:
            record["step"] = step
        return self._append(record)

    def observation(self, kind: str, **fields: Any) -> bool:
        """Record a structured observation of a driver (such as one cuda-graph arm)."""
        return self._append({"observation": kind, **fields})


def dtype_name(dtype: Any) -> str:
    """The protocol's dtype name for a numpy dtype (ml_dtypes' bfloat16/fp8 included);
    TypeError for one the protocol cannot carry (complex, object, ml_dtypes' IEEE-style
    float8_e4m3, whose encoding differs from the protocol's float8_e4m3 = e4m3fn)."""
    import numpy as np

    from redfirst.gates import dtypes

    name = np.dtype(dtype).name  # "float32" for ">f4" too: the bytes are written little-endian
    if name == "float8_e4m3":
        raise TypeError("ml_dtypes float8_e4m3 (IEEE-style, with infinities) is not the protocol's e4m3fn")
    try:
        return dtypes.lookup(name).name
    except dtypes.DTypeError as exc:
        raise TypeError(str(exc)) from None


def recorder() -> Recorder:
    """A recorder for the running gate (inactive outside one)."""
    return Recorder(evidence_dir())


def counter(name: str, value: int | float) -> bool:
    return recorder().counter(name, value)


def tensor(name: str, array: Any, step: int | None = None, dtype: str | None = None) -> bool:
    return recorder().tensor(name, array, step, dtype)


def observation(kind: str, **fields: Any) -> bool:
    return recorder().observation(kind, **fields)


def gates_evidence_fixture() -> Iterator[Recorder]:
    """Body of the `gates_evidence` pytest fixture (registered by redfirst.gates.pytest_plugin)."""
    yield recorder()
