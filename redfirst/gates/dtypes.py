"""The evidence protocol's dtypes: names, widths, bit patterns and decoding to float64.

numpy has no bfloat16 or fp8, so those are held as their same-width unsigned integer
bit patterns and decoded here (bfloat16: the high half of a float32; fp8: 256-entry
tables built from the OCP 8-bit floating point specification, v1.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


class DTypeError(ValueError):
    """A dtype name the protocol does not know."""


@dataclass(frozen=True)
class DType:
    """One protocol dtype: how its bytes are held and how to read them as numbers."""

    name: str
    kind: str            # "int" | "uint" | "float" | "bool"
    itemsize: int        # bytes per value
    storage: np.dtype[Any]   # little-endian numpy dtype the bytes are loaded as
    bits: np.dtype[Any]      # unsigned integer of the same width: the bit pattern

    @property
    def held_as_bits(self) -> bool:
        """numpy has no such type: the values are held as bit patterns (bfloat16, fp8)."""
        return self.kind == "float" and self.storage == self.bits


def _make(name: str, kind: str, storage: str) -> DType:
    dt = np.dtype(storage).newbyteorder("<")
    return DType(name, kind, dt.itemsize, dt, np.dtype(f"<u{dt.itemsize}"))


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        _make("int8", "int", "i1"),
        _make("int16", "int", "i2"),
        _make("int32", "int", "i4"),
        _make("int64", "int", "i8"),
        _make("uint8", "uint", "u1"),
        _make("uint16", "uint", "u2"),
        _make("uint32", "uint", "u4"),
        _make("uint64", "uint", "u8"),
        _make("float16", "float", "f2"),
        _make("float32", "float", "f4"),
        _make("float64", "float", "f8"),
        _make("bfloat16", "float", "u2"),
        _make("float8_e4m3", "float", "u1"),
        _make("float8_e5m2", "float", "u1"),
        _make("bool", "bool", "?"),
    )
}

# Other spellings of the same encoding (ml_dtypes and torch say float8_e4m3fn).
ALIASES = {"float8_e4m3fn": "float8_e4m3"}


def lookup(name: str) -> DType:
    """The protocol dtype called `name` (aliases accepted); DTypeError otherwise."""
    found = DTYPES.get(ALIASES.get(name, name))
    if found is None:
        known = ", ".join(sorted(DTYPES))
        raise DTypeError(f"unknown dtype {name!r} (known: {known}; alias float8_e4m3fn)")
    return found


def bit_patterns(array: np.ndarray[Any, Any], dtype: DType) -> np.ndarray[Any, Any]:
    """The values' bit patterns as unsigned integers of the dtype's width (a view, no copy)."""
    return np.ascontiguousarray(array).view(dtype.bits)


def _fp8_table(exponent_bits: int, mantissa_bits: int, ieee_specials: bool) -> np.ndarray[Any, Any]:
    """float64 value of each of the 256 fp8 bit patterns.

    e5m2 (ieee_specials): exponent all ones is infinity (mantissa 0) or NaN.
    e4m3fn: no infinities; only S.1111.111 is NaN, other all-ones exponents are normal.
    """
    b = np.arange(256, dtype=np.int64)
    bias = (1 << (exponent_bits - 1)) - 1
    sign = np.where(b >> 7 == 1, -1.0, 1.0)
    exponent = (b >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = (b & ((1 << mantissa_bits) - 1)).astype(np.float64)
    scale = float(1 << mantissa_bits)
    normal = (1.0 + mantissa / scale) * np.exp2(exponent - bias)
    subnormal = (mantissa / scale) * np.exp2(1 - bias)
    table = sign * np.where(exponent == 0, subnormal, normal)
    top = (1 << exponent_bits) - 1
    if ieee_specials:
        table = np.where((exponent == top) & (mantissa == 0), sign * np.inf, table)
        table = np.where((exponent == top) & (mantissa != 0), np.nan, table)
    else:
        table = np.where((exponent == top) & (mantissa == scale - 1), np.nan, table)
    table.setflags(write=False)
    return table


FP8_E4M3 = _fp8_table(4, 3, ieee_specials=False)
FP8_E5M2 = _fp8_table(5, 2, ieee_specials=True)


def to_float64(array: np.ndarray[Any, Any], dtype: DType) -> np.ndarray[Any, Any]:
    """The values as float64 (bfloat16 and fp8 decoded from their bit patterns).

    int64/uint64 beyond 2**53 round here; `compare.close` measures integer error exactly.
    """
    if dtype.name == "bfloat16":
        widened = array.astype(np.uint32) << np.uint32(16)
        return widened.view(np.float32).astype(np.float64)
    if dtype.name == "float8_e4m3":
        return FP8_E4M3[array]
    if dtype.name == "float8_e5m2":
        return FP8_E5M2[array]
    return array.astype(np.float64)
