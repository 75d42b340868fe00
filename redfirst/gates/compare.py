"""Comparisons of a reference tensor with a candidate: bit for bit (G1) or within a tolerance.

`bit_exact` compares bit patterns, never values: `-0.0` differs from `0.0`, NaNs with
different payloads differ, identical NaN patterns are equal. Both comparators are
vectorised numpy; neither loops over elements in Python.

`Comparison` is the one report shape for every comparator. A device-side comparator
(CUDA) that counts differing words on the GPU builds the same report with `from_raw`
from its raw result (count, first index, both bit patterns, a hash of each buffer), so
a host and a device comparison of the same data describe themselves identically.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from redfirst.gates import dtypes

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Comparison:
    """What a comparison found. `mismatch` set: dtype or shape differ, nothing was compared (RED).

    `values == 0` is a comparison of nothing: the grader makes it NO_DECISION, never GREEN.
    """

    kind: str                            # "bit_exact" | "close"
    dtype: str
    shape: Shape
    values: int                          # values compared
    differing: int                       # bit_exact: differing patterns; close: values outside tolerance
    first_index: int | None = None       # flat (C order) index of the first difference
    first_index_nd: Shape | None = None
    reference_bits: str | None = None    # "0x80000000": both bit patterns at first_index
    candidate_bits: str | None = None
    reference_value: float | None = None   # close only: both values at first_index
    candidate_value: float | None = None
    max_abs_error: float | None = None     # close only, over pairs where neither is NaN
    max_rel_error: float | None = None
    max_ulp: int | None = None
    mismatch: str | None = None
    reference_sha256: str | None = None
    candidate_sha256: str | None = None

    @property
    def holds(self) -> bool:
        """Nothing differs and something was compared (the min_values floor is the grader's)."""
        return self.mismatch is None and self.values > 0 and self.differing == 0

    def describe(self) -> str:
        """One line for reports: `500 values, 0 differing`, or the first difference with both patterns."""
        if self.mismatch is not None:
            return self.mismatch
        noun = "differing" if self.kind == "bit_exact" else "outside tolerance"
        text = f"{self.values} values, {self.differing} {noun}"
        if self.differing and self.first_index is not None:
            nd = ", ".join(str(i) for i in self.first_index_nd or ())
            text += f"; first at index {self.first_index} [{nd}]: "
            if self.kind == "bit_exact":
                text += f"reference {self.reference_bits} candidate {self.candidate_bits}"
            else:
                text += (
                    f"reference {_num(self.reference_value)} ({self.reference_bits}) "
                    f"candidate {_num(self.candidate_value)} ({self.candidate_bits})"
                )
        if self.kind == "close" and self.values:
            text += (
                f"; max abs error {_num(self.max_abs_error)}, max rel error {_num(self.max_rel_error)}"
                f", max ulp {self.max_ulp if self.max_ulp is not None else 'n/a'}"
            )
        return text


def _num(value: float | None) -> str:
    return "n/a" if value is None else repr(value)


def hex_bits(pattern: int, itemsize: int) -> str:
    """A bit pattern as `0x` and two hex digits per byte: `0x80000000` for a float32."""
    return f"0x{pattern:0{itemsize * 2}x}"


def sha256_of(array: np.ndarray[Any, Any]) -> str:
    """Hash of the buffer's bytes in C order, as a device comparator hashes its buffer."""
    return hashlib.sha256(np.ascontiguousarray(array).data.cast("B")).hexdigest()


def _mismatch(
    dtype_ref: str, dtype_cand: str, shape_ref: Sequence[int], shape_cand: Sequence[int]
) -> str | None:
    ref, cand = dtypes.lookup(dtype_ref), dtypes.lookup(dtype_cand)
    if ref.name != cand.name:
        return f"dtype mismatch: reference {ref.name}, candidate {cand.name}"
    if tuple(shape_ref) != tuple(shape_cand):
        return f"shape mismatch: reference {list(shape_ref)}, candidate {list(shape_cand)}"
    return None


def _checked(array: np.ndarray[Any, Any], dt: dtypes.DType, shape: Shape, role: str) -> np.ndarray[Any, Any]:
    # A caller handing an array that disagrees with its record is a bug, not a RED.
    if array.dtype.itemsize != dt.itemsize or tuple(array.shape) != shape:
        raise ValueError(
            f"{role} array is {array.dtype}{list(array.shape)}, its record says {dt.name}{list(shape)}"
        )
    return np.ascontiguousarray(array)


def from_raw(
    *,
    kind: str,
    dtype: str,
    shape: Sequence[int],
    values: int,
    differing: int,
    first_index: int | None,
    reference_bits: int | None,
    candidate_bits: int | None,
    reference_sha256: str | None = None,
    candidate_sha256: str | None = None,
    **close_fields: Any,
) -> Comparison:
    """A Comparison from a comparator's raw result (integers, as a device kernel returns them)."""
    dt = dtypes.lookup(dtype)
    shp = tuple(int(s) for s in shape)
    nd: Shape | None = None
    if first_index is not None:
        nd = tuple(int(i) for i in np.unravel_index(first_index, shp)) if shp else ()
    return Comparison(
        kind=kind,
        dtype=dt.name,
        shape=shp,
        values=int(values),
        differing=int(differing),
        first_index=None if first_index is None else int(first_index),
        first_index_nd=nd,
        reference_bits=None if reference_bits is None else hex_bits(int(reference_bits), dt.itemsize),
        candidate_bits=None if candidate_bits is None else hex_bits(int(candidate_bits), dt.itemsize),
        reference_sha256=reference_sha256,
        candidate_sha256=candidate_sha256,
        **close_fields,
    )


def bit_exact(
    reference: np.ndarray[Any, Any],
    candidate: np.ndarray[Any, Any],
    dtype_ref: str,
    dtype_cand: str,
    shape_ref: Sequence[int],
    shape_cand: Sequence[int],
    *,
    hashes: bool = True,
) -> Comparison:
    """Compare bit patterns. A dtype or shape mismatch compares nothing and sets `mismatch`."""
    dt = dtypes.lookup(dtype_ref)
    shape = tuple(int(s) for s in shape_ref)
    mismatch = _mismatch(dtype_ref, dtype_cand, shape_ref, shape_cand)
    if mismatch is not None:
        return Comparison("bit_exact", dt.name, shape, 0, 0, mismatch=mismatch)
    ref = dtypes.bit_patterns(_checked(reference, dt, shape, "reference"), dt).reshape(-1)
    cand = dtypes.bit_patterns(_checked(candidate, dt, shape, "candidate"), dt).reshape(-1)
    differs = ref != cand
    count = int(np.count_nonzero(differs))
    first = int(np.argmax(differs)) if count else None
    return from_raw(
        kind="bit_exact",
        dtype=dt.name,
        shape=shape,
        values=ref.size,
        differing=count,
        first_index=first,
        reference_bits=None if first is None else int(ref[first]),
        candidate_bits=None if first is None else int(cand[first]),
        reference_sha256=sha256_of(ref) if hashes else None,
        candidate_sha256=sha256_of(cand) if hashes else None,
    )


def _ordered(array: np.ndarray[Any, Any], dt: dtypes.DType) -> np.ndarray[Any, Any]:
    """Integers whose order and differences are the values' order and ulp steps.

    Floats: sign-magnitude bit patterns turned two's complement (-0.0 and 0.0 both 0).
    Integers: the values themselves. Returned as int64 except uint64, kept unsigned.
    """
    if dt.kind == "float":
        signed = dtypes.bit_patterns(array, dt).view(f"<i{dt.itemsize}")
        # A set sign bit reads as a negative integer: min - v is minus the magnitude, no overflow.
        lowest = signed.dtype.type(np.iinfo(signed.dtype).min)
        return np.where(signed < 0, lowest - signed, signed).astype(np.int64)
    if dt.name == "uint64":
        return array.astype(np.uint64)
    return array.astype(np.int64)


def _distance(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], narrow: bool) -> np.ndarray[Any, Any]:
    """|a - b| as uint64, exact for any two int64 (or two uint64) without overflow.

    `narrow`: both came from values of at most 32 bits, so int64 subtraction cannot overflow."""
    if narrow:
        return np.abs(a - b).view(np.uint64)
    larger = a >= b
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    return np.where(larger, ua - ub, ub - ua)


def close(
    reference: np.ndarray[Any, Any],
    candidate: np.ndarray[Any, Any],
    dtype_ref: str,
    dtype_cand: str,
    shape_ref: Sequence[int],
    shape_cand: Sequence[int],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    max_ulp: int | None = None,
    hashes: bool = True,
) -> Comparison:
    """Compare values within a tolerance.

    A value is close when `|c - r| <= atol + rtol * |r|` (None counts as 0), or, when
    `max_ulp` is given, when it is at most `max_ulp` steps of the dtype away from the
    reference. NaN is never close, not even to NaN; an infinity is close only to the same
    infinity (never "one ulp above the largest finite value").
    """
    dt = dtypes.lookup(dtype_ref)
    shape = tuple(int(s) for s in shape_ref)
    mismatch = _mismatch(dtype_ref, dtype_cand, shape_ref, shape_cand)
    if mismatch is not None:
        return Comparison("close", dt.name, shape, 0, 0, mismatch=mismatch)
    ref_raw = _checked(reference, dt, shape, "reference").reshape(-1)
    cand_raw = _checked(candidate, dt, shape, "candidate").reshape(-1)
    count, first = 0, None
    abs_max = rel_max = ulp_max = None
    for start in range(0, ref_raw.size, CLOSE_BLOCK):
        block = _close_block(ref_raw[start : start + CLOSE_BLOCK], cand_raw[start : start + CLOSE_BLOCK],
                             dt, rtol, atol, max_ulp)
        if block.outside and first is None:
            first = start + block.first
        count += block.outside
        abs_max = _larger(abs_max, block.max_abs_error)
        rel_max = _larger(rel_max, block.max_rel_error)
        ulp_max = _larger(ulp_max, block.max_ulp)
    pair = None if first is None else (ref_raw[first : first + 1], cand_raw[first : first + 1])
    return from_raw(
        kind="close",
        dtype=dt.name,
        shape=shape,
        values=ref_raw.size,
        differing=count,
        first_index=first,
        reference_bits=None if pair is None else int(dtypes.bit_patterns(pair[0], dt)[0]),
        candidate_bits=None if pair is None else int(dtypes.bit_patterns(pair[1], dt)[0]),
        reference_sha256=sha256_of(ref_raw) if hashes else None,
        candidate_sha256=sha256_of(cand_raw) if hashes else None,
        reference_value=None if pair is None else float(dtypes.to_float64(pair[0], dt)[0]),
        candidate_value=None if pair is None else float(dtypes.to_float64(pair[1], dt)[0]),
        max_abs_error=abs_max,
        max_rel_error=rel_max,
        max_ulp=None if ulp_max is None else int(ulp_max),
    )


# Values per block in `close`: its dozen float64 temporaries stay in cache instead of
# costing page faults over the whole array (64 MiB float32: 2.4 s unblocked on 2 cores).
CLOSE_BLOCK = 1 << 16


@dataclass(frozen=True)
class _Block:
    outside: int
    first: int
    max_abs_error: float | None
    max_rel_error: float | None
    max_ulp: int | None


def _larger(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def _close_block(
    ref_raw: np.ndarray[Any, Any],
    cand_raw: np.ndarray[Any, Any],
    dt: dtypes.DType,
    rtol: float | None,
    atol: float | None,
    max_ulp: int | None,
) -> _Block:
    ref, cand = dtypes.to_float64(ref_raw, dt), dtypes.to_float64(cand_raw, dt)
    ulp = _distance(_ordered(ref_raw, dt), _ordered(cand_raw, dt), narrow=dt.itemsize <= 4)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if dt.kind == "float":
            equal = cand == ref
            abs_err = np.where(equal, 0.0, np.abs(cand - ref))  # equal infinities: 0, not NaN
        else:
            equal = ulp == 0
            abs_err = ulp.astype(np.float64)  # exact integer difference, rounded once (int64 > 2**53)
        comparable = ~(np.isnan(ref) | np.isnan(cand))
        finite = np.isfinite(ref) & np.isfinite(cand)
        allowed = (atol or 0.0) + (rtol or 0.0) * np.abs(ref)
        ok = equal | (abs_err <= allowed)  # equal: also when rtol * inf makes `allowed` NaN
        if max_ulp is not None:
            ok |= finite & (ulp <= np.uint64(max_ulp))
        # NaN fails every test above by itself; an infinity passes `rtol * inf` unless refused here.
        ok &= finite | equal
        rel_err = np.where(abs_err == 0.0, 0.0, abs_err / np.abs(ref))
    outside = ~ok
    count = int(np.count_nonzero(outside))
    any_comparable = bool(comparable.any())
    ulp_comparable = finite & comparable
    return _Block(
        outside=count,
        first=int(np.argmax(outside)) if count else 0,
        max_abs_error=float(abs_err[comparable].max()) if any_comparable else None,
        max_rel_error=float(rel_err[comparable].max()) if any_comparable else None,
        max_ulp=int(ulp[ulp_comparable].max()) if ulp_comparable.any() else None,
    )
