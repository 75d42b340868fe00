"""Distances in units in the last place, counted on raw bits (float32, bfloat16, float16, float64).

A float's bits, read as sign and magnitude, map to an integer line on which neighbouring
floats are neighbouring integers (-0 and +0 both at 0); the distance of two values is the
gap on that line. A NaN on either side is no distance (None): never "within N ULP".
"""

from __future__ import annotations

from typing import Any

import numpy as np

WIDTHS = {"float16": (16, 10), "bfloat16": (16, 7), "float32": (32, 23), "float64": (64, 52)}


def _width(dtype: str) -> tuple[int, int]:
    try:
        return WIDTHS[dtype]
    except KeyError:
        raise ValueError(f"no ULP distance for dtype {dtype!r} (known: {', '.join(WIDTHS)})") from None


def _is_nan(bits: int, width: int, mantissa: int) -> bool:
    exponent = (bits >> mantissa) & ((1 << (width - 1 - mantissa)) - 1)
    return exponent == (1 << (width - 1 - mantissa)) - 1 and bits & ((1 << mantissa) - 1) != 0


def _line(bits: int, width: int) -> int:
    magnitude = bits & ((1 << (width - 1)) - 1)
    return -magnitude if bits >> (width - 1) else magnitude


def ulp_distance(a_bits: int, b_bits: int, dtype: str) -> int | None:
    """How many representable values of `dtype` lie between two bit patterns; None if either is NaN."""
    width, mantissa = _width(dtype)
    if _is_nan(a_bits, width, mantissa) or _is_nan(b_bits, width, mantissa):
        return None
    return abs(_line(a_bits, width) - _line(b_bits, width))


def max_ulp(reference: bytes, candidate: bytes, dtype: str) -> int | None:
    """The largest distance between two buffers of `dtype` (little-endian bytes, same length),
    0 when they are equal; None when a NaN differs from its counterpart."""
    width, mantissa = _width(dtype)
    if len(reference) != len(candidate):
        raise ValueError(f"buffers of {len(reference)} and {len(candidate)} bytes")
    unsigned = np.dtype(f"<u{width // 8}")
    a = np.frombuffer(reference, dtype=unsigned)
    b = np.frombuffer(candidate, dtype=unsigned)
    differ = a != b
    if not differ.any():
        return 0
    a, b = a[differ], b[differ]
    exp_mask = (1 << (width - 1 - mantissa)) - 1
    man_mask = (1 << mantissa) - 1

    def nan(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        wide = x.astype(np.uint64)
        exponent = (wide >> np.uint64(mantissa)) & np.uint64(exp_mask)
        result: np.ndarray[Any, Any] = (exponent == np.uint64(exp_mask)) & ((wide & np.uint64(man_mask)) != 0)
        return result

    if nan(a).any() or nan(b).any():
        return None
    if width == 64:   # beyond int64 arithmetic: exact Python integers
        return max(abs(_line(int(x), 64) - _line(int(y), 64)) for x, y in zip(a.tolist(), b.tolist(), strict=True))

    def line(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        v = x.astype(np.int64)
        magnitude = v & ((1 << (width - 1)) - 1)
        result: np.ndarray[Any, Any] = np.where((v >> (width - 1)) & 1, -magnitude, magnitude)
        return result

    return int(np.abs(line(a) - line(b)).max())
