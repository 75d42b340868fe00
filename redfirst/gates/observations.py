"""The evidence protocol, reading side: `<dir>/evidence.jsonl` into records with line numbers.

Nothing here trusts the program that wrote the folder: every malformed line, unknown
record, wrong field type, missing tensor file, file path leaving the folder or tensor
file of the wrong size becomes a problem `evidence.jsonl:LINE: message`, which the
grader turns into NO_DECISION (cause evidence). A problem is never dropped silently.

A counter recorded several times keeps every value in order; the grader judges them as the gate
declares (`combine:`), and values that differ with nothing declared decide nothing
(redfirst.gates.grade.counter_values).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any

from redfirst.gates.evidence import FILE

if TYPE_CHECKING:
    import numpy as np

    from redfirst.gates import dtypes

Number = int | float
_KEYS = {
    "counter": {"counter", "value"},
    "tensor": {"tensor", "dtype", "shape", "file", "step"},
}


class EvidenceError(Exception):
    """A tensor that cannot be loaded as its record says; the message is a problem line."""


@dataclass(frozen=True)
class CounterRecord:
    name: str
    value: Number
    line: int


@dataclass(frozen=True)
class TensorRecord:
    name: str
    dtype: str              # protocol name, aliases resolved (float8_e4m3fn -> float8_e4m3)
    shape: tuple[int, ...]
    file: str               # relative to the evidence folder, never leaving it
    step: int | None
    line: int

    @property
    def values(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        from redfirst.gates import dtypes
        return self.values * dtypes.lookup(self.dtype).itemsize


@dataclass(frozen=True)
class ObservationRecord:
    """A structured observation kept as written (`data` includes the `observation` key)."""

    kind: str
    data: Mapping[str, Any]
    line: int


@dataclass(frozen=True)
class Evidence:
    directory: Path
    present: bool                                   # whether evidence.jsonl exists at all
    counter_records: tuple[CounterRecord, ...] = ()
    tensors: tuple[TensorRecord, ...] = ()
    observations: tuple[ObservationRecord, ...] = ()
    problems: tuple[str, ...] = ()
    counters: Mapping[str, tuple[Number, ...]] = field(default_factory=dict)  # name -> values in order

    def counter(self, name: str) -> Number | None:
        """The counter's last recorded value, or None when it was never recorded (grading reads every
        value: redfirst.gates.grade.counter_values)."""
        values = self.counters.get(name)
        return values[-1] if values else None

    def tensor_records(self, name: str) -> tuple[TensorRecord, ...]:
        return tuple(t for t in self.tensors if t.name == name)


def _where(line: int) -> str:
    return f"{FILE}:{line}"


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _escapes(path: str) -> bool:
    # Checked as both POSIX and Windows paths: evidence may come from another machine.
    for pure in (PurePosixPath(path), PureWindowsPath(path)):
        if pure.is_absolute() or pure.anchor or ".." in pure.parts:
            return True
    return False


def _counter(obj: dict[str, Any], line: int) -> CounterRecord | str:
    name, value = obj.get("counter"), obj.get("value")
    if not isinstance(name, str) or not name:
        return "counter name must be a non-empty string"
    if "value" not in obj:
        return f"counter {name!r} has no value"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"counter {name!r} value must be a number, got {json.dumps(value)}"
    if isinstance(value, int) and abs(value) > 2**64:
        # A count beyond 64 bits is no count, and would overflow every float comparison.
        return f"counter {name!r} value is an integer beyond 2**64 in magnitude"
    return CounterRecord(name, value, line)


def _tensor(obj: dict[str, Any], line: int, directory: Path) -> TensorRecord | str:
    from redfirst.gates import dtypes
    name = obj.get("tensor")
    if not isinstance(name, str) or not name:
        return "tensor name must be a non-empty string"
    dtype, shape, file, step = obj.get("dtype"), obj.get("shape"), obj.get("file"), obj.get("step")
    if not isinstance(dtype, str):
        return f"tensor {name!r} dtype must be a string"
    try:
        dt = dtypes.lookup(dtype)
    except dtypes.DTypeError as exc:
        return f"tensor {name!r}: {exc}"
    if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
        return f"tensor {name!r} shape must be a list of non-negative integers, got {json.dumps(shape)}"
    if step is not None and not (_is_int(step) and step >= 0):
        return f"tensor {name!r} step must be a non-negative integer, got {json.dumps(step)}"
    if not isinstance(file, str) or not file:
        return f"tensor {name!r} file must be a non-empty string"
    if _escapes(file):
        return f"tensor {name!r} file {file!r} leaves the evidence folder"
    record = TensorRecord(name, dt.name, tuple(shape), file, step, line)
    size_problem = _size_problem(directory, record)
    return size_problem if size_problem else record


def _size_problem(directory: Path, record: TensorRecord) -> str | None:
    """Why the tensor file cannot hold the record's dtype x shape, or None."""
    path = directory / record.file
    root = directory.resolve()
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError) as exc:
        return f"tensor {record.name!r} file {record.file!r}: {exc}"
    if not resolved.is_relative_to(root):
        return f"tensor {record.name!r} file {record.file!r} leaves the evidence folder (link)"
    if not path.is_file():
        return f"tensor {record.name!r} file {record.file!r} is missing"
    if record.file.endswith(".npy"):
        return _npy_problem(path, record)
    size = path.stat().st_size
    if size != record.nbytes:
        return (
            f"tensor {record.name!r} file {record.file!r} has {size} bytes, "
            f"{record.dtype} x {list(record.shape)} needs {record.nbytes}"
        )
    return None


def _npy_accepts(stored: np.dtype[Any], dt: dtypes.DType) -> bool:
    if dt.held_as_bits:  # bfloat16/fp8 arrive as same-width integers or ml_dtypes' opaque void
        return stored.itemsize == dt.itemsize and stored.kind in "uiV"
    return stored.kind == dt.storage.kind and stored.itemsize == dt.itemsize


def _npy_problem(path: Path, record: TensorRecord) -> str | None:
    """Check a .npy header (not its data) against the record, and its size against the header."""
    import numpy as np

    from redfirst.gates import dtypes
    where = f"tensor {record.name!r} file {record.file!r}"
    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                shape, _fortran, stored = np.lib.format.read_array_header_1_0(handle)
            else:
                shape, _fortran, stored = np.lib.format.read_array_header_2_0(handle)
            offset = handle.tell()
    except (ValueError, OSError, EOFError) as exc:
        return f"{where} is not a readable .npy file: {exc}"
    dt = dtypes.lookup(record.dtype)
    if tuple(shape) != record.shape:
        return f"{where} holds shape {list(shape)}, the record says {list(record.shape)}"
    if stored.hasobject or not _npy_accepts(stored, dt):
        return f"{where} holds {stored}, the record says {record.dtype}"
    size = path.stat().st_size - offset
    if size != record.nbytes:
        return f"{where} has {size} data bytes, {record.dtype} x {list(record.shape)} needs {record.nbytes}"
    return None


def _npy_values(path: Path, dt: dtypes.DType) -> np.ndarray[Any, Any]:
    import numpy as np
    array = np.load(path, allow_pickle=False)
    if not dt.held_as_bits:
        return np.ascontiguousarray(array.astype(dt.storage))  # also swaps big-endian files
    if array.dtype.kind == "V":
        return np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=dt.storage).reshape(array.shape)
    little = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<")))
    return little.view(dt.storage)


def _identity(path: Path) -> object:
    """What makes two names one file: the inode (hard links too), else the resolved path."""
    try:
        st = path.stat()
    except OSError:
        return path.resolve()
    return (st.st_dev, st.st_ino)


def read(directory: Path | str) -> Evidence:
    """Read `<directory>/evidence.jsonl`. No file: `present` False and no records (not a problem)."""
    directory = Path(directory)
    path = directory / FILE
    if not path.is_file():
        return Evidence(directory, present=False)
    counters: list[CounterRecord] = []
    tensors: list[TensorRecord] = []
    observations: list[ObservationRecord] = []
    problems: list[str] = []
    seen: dict[tuple[str, int | None], int] = {}
    files: dict[object, TensorRecord] = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                problems.append(f"{_where(number)}: not UTF-8")
                continue
            if not text.strip():
                continue
            if not text.endswith("\n"):
                # A line without its newline was cut off mid-write (a crash or a kill).
                problems.append(f"{_where(number)}: incomplete last line (no newline)")
                continue
            try:
                obj = json.loads(text, parse_constant=_reject_constant)
            except ValueError as exc:
                problems.append(f"{_where(number)}: not JSON: {exc}")
                continue
            if not isinstance(obj, dict):
                problems.append(f"{_where(number)}: a record must be a JSON object")
                continue
            kinds = [k for k in ("counter", "tensor", "observation") if k in obj]
            if len(kinds) != 1:
                what = "unknown record type" if not kinds else f"ambiguous record ({', '.join(kinds)})"
                problems.append(f"{_where(number)}: {what}; expected one of counter, tensor, observation")
                continue
            kind = kinds[0]
            extra = sorted(set(obj) - _KEYS[kind]) if kind in _KEYS else []
            if extra:
                problems.append(f"{_where(number)}: unknown {kind} field(s): {', '.join(extra)}")
                continue
            result: CounterRecord | TensorRecord | ObservationRecord | str
            if kind == "counter":
                result = _counter(obj, number)
            elif kind == "tensor":
                result = _tensor(obj, number, directory)
            elif isinstance(obj["observation"], str) and obj["observation"]:
                result = ObservationRecord(obj["observation"], obj, number)
            else:
                result = "observation kind must be a non-empty string"
            if isinstance(result, str):
                problems.append(f"{_where(number)}: {result}")
            elif isinstance(result, CounterRecord):
                counters.append(result)
            elif isinstance(result, TensorRecord):
                key = (result.name, result.step)
                if key in seen:
                    step = "" if result.step is None else f" step {result.step}"
                    problems.append(
                        f"{_where(number)}: tensor {result.name!r}{step} recorded again "
                        f"(first on line {seen[key]}); which one to compare is ambiguous"
                    )
                    tensors.append(result)      # kept: a comparison of this tensor is NO_DECISION, never RED
                    continue
                where_on_disk = _identity(directory / result.file)  # "./a.bin", "a.bin" and hard links are one file
                shared = files.get(where_on_disk)
                if shared is not None:
                    # Two records over one file would make any comparison of them hold trivially.
                    problems.append(
                        f"{_where(number)}: tensor {result.name!r} file {result.file!r} is already the file of "
                        f"tensor {shared.name!r} (line {shared.line}); data compared with itself proves nothing"
                    )
                    continue
                seen[key] = number
                files[where_on_disk] = result
                tensors.append(result)
            else:
                observations.append(result)
    by_name: dict[str, list[Number]] = {}
    for record in counters:
        by_name.setdefault(record.name, []).append(record.value)
    return Evidence(
        directory,
        present=True,
        counter_records=tuple(counters),
        tensors=tuple(tensors),
        observations=tuple(observations),
        problems=tuple(problems),
        counters={name: tuple(values) for name, values in by_name.items()},
    )


def load_tensor(directory: Path | str, record: TensorRecord) -> np.ndarray[Any, Any]:
    """The tensor's values as a little-endian C-order array of the dtype's storage type
    (bfloat16/fp8: their unsigned bit patterns; raw files load read-only). EvidenceError
    when the file does not hold exactly dtype x shape; never truncates or pads."""
    import numpy as np

    from redfirst.gates import dtypes
    directory = Path(directory)
    if _escapes(record.file):  # before touching the path at all
        problem: str | None = f"tensor {record.name!r} file {record.file!r} leaves the evidence folder"
    else:
        problem = _size_problem(directory, record)
    if problem:
        raise EvidenceError(f"{_where(record.line)}: {problem}")
    dt = dtypes.lookup(record.dtype)
    path = directory / record.file
    if record.file.endswith(".npy"):
        try:
            return _npy_values(path, dt)
        except (ValueError, OSError, EOFError) as exc:  # the file changed since it was checked
            raise EvidenceError(f"{_where(record.line)}: tensor {record.name!r} {record.file!r}: {exc}") from exc
    data = path.read_bytes()
    if len(data) != record.nbytes:  # the file changed since it was checked: still never truncate
        raise EvidenceError(f"{_where(record.line)}: tensor {record.name!r} {record.file!r} changed size")
    return np.frombuffer(data, dtype=dt.storage).reshape(record.shape)
