"""Bit-exact and close comparisons: bit patterns, not values; one report shape for every comparator."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from redfirst.gates import compare, dtypes

ALL_DTYPES = sorted(dtypes.DTYPES)


def patterns(dtype: str, bits: list[int] | np.ndarray) -> np.ndarray:
    """An array of the dtype's storage type holding exactly these bit patterns."""
    dt = dtypes.lookup(dtype)
    return np.asarray(bits, dtype=dt.bits).view(dt.storage)


def f32(*bits: int) -> np.ndarray:
    return patterns("float32", list(bits))


def bit_exact(ref: np.ndarray, cand: np.ndarray, dtype: str = "float32") -> compare.Comparison:
    return compare.bit_exact(ref, cand, dtype, dtype, ref.shape, cand.shape)


# --- bit_exact ------------------------------------------------------------------------------

def test_identical_arrays_report_values_and_zero_differing():
    ref = np.random.default_rng(1).standard_normal((5, 100)).astype(np.float32)
    result = bit_exact(ref, ref.copy())
    assert result.describe() == "500 values, 0 differing"
    assert (result.values, result.differing, result.first_index) == (500, 0, None)
    assert result.holds


def test_negative_zero_differs_from_zero():
    ref = np.zeros((5, 100), dtype=np.float32)
    cand = ref.copy()
    cand[0, 7] = -0.0
    result = bit_exact(ref, cand)
    assert result.describe() == (
        "500 values, 1 differing; first at index 7 [0, 7]: reference 0x00000000 candidate 0x80000000"
    )
    assert not result.holds


def test_nan_payloads_that_differ_are_different():
    result = bit_exact(f32(0x7FC00000, 0x3F800000), f32(0x7FC00001, 0x3F800000))
    assert (result.differing, result.first_index) == (1, 0)
    assert (result.reference_bits, result.candidate_bits) == ("0x7fc00000", "0x7fc00001")


def test_identical_nan_patterns_are_equal():
    nan = f32(0x7FC00123, 0xFFC00000)
    result = bit_exact(nan, nan.copy())
    assert (result.values, result.differing) == (2, 0)


def test_counts_every_difference_and_reports_the_first_in_c_order():
    ref = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    cand = ref.copy()
    cand[1, 2, 3] = 0
    cand[0, 1, 2] = -1
    cand[1, 0, 0] = 7
    result = compare.bit_exact(ref, cand, "int32", "int32", [2, 3, 4], [2, 3, 4])
    assert result.differing == 3
    assert (result.first_index, result.first_index_nd) == (6, (0, 1, 2))
    assert (result.reference_bits, result.candidate_bits) == ("0x00000006", "0xffffffff")
    assert result.describe() == (
        "24 values, 3 differing; first at index 6 [0, 1, 2]: reference 0x00000006 candidate 0xffffffff"
    )


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_detects_one_flipped_bit_with_patterns_of_its_width(dtype):
    dt = dtypes.lookup(dtype)
    rng = np.random.default_rng(7)
    top = 2 if dtype == "bool" else 1 << (8 * dt.itemsize)
    bits = rng.integers(0, top, size=(3, 50), dtype=np.uint64).astype(dt.bits)
    ref = bits.view(dt.storage)
    flipped = bits.copy()
    flipped[2, 9] ^= dt.bits.type(1)
    result = compare.bit_exact(ref, flipped.view(dt.storage), dtype, dtype, (3, 50), (3, 50))
    assert (result.values, result.differing) == (150, 1)
    assert (result.first_index, result.first_index_nd) == (109, (2, 9))
    assert len(result.reference_bits) == len(result.candidate_bits) == 2 + 2 * dt.itemsize
    assert int(result.reference_bits, 16) ^ int(result.candidate_bits, 16) == 1
    assert bit_exact(ref, ref.copy(), dtype).describe() == "150 values, 0 differing"


@pytest.mark.parametrize(
    ("dtype", "zero", "negative_zero", "hex_negative_zero"),
    [
        ("float16", 0x0000, 0x8000, "0x8000"),
        ("bfloat16", 0x0000, 0x8000, "0x8000"),
        ("float8_e4m3", 0x00, 0x80, "0x80"),
        ("float8_e5m2", 0x00, 0x80, "0x80"),
        ("float64", 0, 1 << 63, "0x8000000000000000"),
    ],
)
def test_negative_zero_differs_in_every_float_width(dtype, zero, negative_zero, hex_negative_zero):
    result = bit_exact(patterns(dtype, [zero]), patterns(dtype, [negative_zero]), dtype)
    assert result.differing == 1
    assert result.candidate_bits == hex_negative_zero


def test_dtype_mismatch_is_reported_and_nothing_is_compared():
    ref = np.zeros(4, dtype=np.float32)
    result = compare.bit_exact(ref, ref.view(np.int32), "float32", "int32", [4], [4])
    assert result.mismatch == "dtype mismatch: reference float32, candidate int32"
    assert result.describe() == result.mismatch
    assert result.values == 0 and not result.holds


def test_same_width_float_formats_are_a_dtype_mismatch():
    bits = patterns("bfloat16", [0x3F80])
    result = compare.bit_exact(bits, bits.view(np.float16), "bfloat16", "float16", [1], [1])
    assert result.mismatch == "dtype mismatch: reference bfloat16, candidate float16"


def test_fp8_alias_names_the_same_dtype():
    bits = patterns("float8_e4m3", [0x38, 0x80])
    result = compare.bit_exact(bits, bits.copy(), "float8_e4m3fn", "float8_e4m3", [2], [2])
    assert result.mismatch is None and result.dtype == "float8_e4m3"
    assert result.describe() == "2 values, 0 differing"


def test_shape_mismatch_with_the_same_number_of_values_is_reported():
    ref = np.zeros((2, 3), dtype=np.float32)
    result = compare.bit_exact(ref, ref.reshape(3, 2), "float32", "float32", [2, 3], [3, 2])
    assert result.mismatch == "shape mismatch: reference [2, 3], candidate [3, 2]"
    assert not result.holds


def test_empty_arrays_compare_zero_values_and_do_not_hold():
    empty = np.zeros((0, 8), dtype=np.float32)
    result = bit_exact(empty, empty.copy())
    assert (result.values, result.differing, result.first_index) == (0, 0, None)
    assert result.describe() == "0 values, 0 differing"
    assert not result.holds  # nothing compared is never a pass


def test_zero_dim_arrays_compare_one_value():
    result = compare.bit_exact(np.array(1.0), np.array(-1.0), "float64", "float64", (), ())
    assert (result.values, result.differing, result.first_index, result.first_index_nd) == (1, 1, 0, ())
    assert result.describe() == (
        "1 values, 1 differing; first at index 0 []: reference 0x3ff0000000000000 candidate 0xbff0000000000000"
    )


def test_big_arrays_count_differences_at_both_ends():
    ref = np.random.default_rng(3).standard_normal(1 << 22).astype(np.float32).reshape(1024, 4096)
    cand = ref.copy()
    cand[-1, -1] = np.nextafter(cand[-1, -1], np.float32(np.inf))
    cand[0, 0] = -cand[0, 0]
    result = bit_exact(ref, cand)
    assert (result.values, result.differing, result.first_index) == (1 << 22, 2, 0)


def test_hashes_are_sha256_of_each_buffers_bytes():
    ref, cand = f32(1, 2, 3), f32(1, 2, 4)
    result = bit_exact(ref, cand)
    assert result.reference_sha256 == hashlib.sha256(ref.tobytes()).hexdigest()
    assert result.candidate_sha256 == hashlib.sha256(cand.tobytes()).hexdigest()
    assert compare.bit_exact(ref, cand, "float32", "float32", [3], [3], hashes=False).reference_sha256 is None


def test_a_device_result_built_with_from_raw_equals_the_host_report():
    ref = np.zeros((4, 8), dtype=np.float32)
    cand = ref.copy()
    cand[2, 5] = -0.0
    cand[3, 0] = np.float32(1.0)
    host = bit_exact(ref, cand)
    # What a device comparator returns: integers and two hashes, no arrays.
    device = compare.from_raw(
        kind="bit_exact", dtype="float32", shape=[4, 8], values=32, differing=2, first_index=21,
        reference_bits=0, candidate_bits=0x80000000,
        reference_sha256=hashlib.sha256(ref.tobytes()).hexdigest(),
        candidate_sha256=hashlib.sha256(cand.tobytes()).hexdigest(),
    )
    assert device == host
    assert device.describe() == host.describe()


def test_unknown_dtype_is_refused():
    with pytest.raises(dtypes.DTypeError, match="unknown dtype 'complex64'"):
        compare.bit_exact(np.zeros(1), np.zeros(1), "complex64", "complex64", [1], [1])


def test_array_that_disagrees_with_its_record_is_a_caller_error():
    with pytest.raises(ValueError, match="record says float32"):
        compare.bit_exact(np.zeros(3, np.float64), np.zeros(3, np.float64), "float32", "float32", [3], [3])


# --- decoding -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("bits", "value"),
    [
        (0x3F80, 1.0), (0xC000, -2.0), (0x4049, 3.140625), (0x7F7F, 3.3895313892515355e38),
        (0x0001, 9.183549615799121e-41), (0x7F80, np.inf), (0xFF80, -np.inf),
    ],
)
def test_bfloat16_decodes_as_the_high_half_of_a_float32(bits, value):
    assert dtypes.to_float64(patterns("bfloat16", [bits]), dtypes.lookup("bfloat16"))[0] == value


# Values from the OCP 8-bit Floating Point Specification (OFP8) v1.0, table 1 and section 5.
E4M3 = [
    (0x00, 0.0), (0x80, -0.0), (0x38, 1.0), (0xB8, -1.0), (0x01, 2.0**-9), (0x07, 7 * 2.0**-9),
    (0x08, 2.0**-6), (0x78, 256.0), (0x7E, 448.0), (0xFE, -448.0), (0x40, 2.0), (0x3C, 1.5),
]
E5M2 = [
    (0x00, 0.0), (0x3C, 1.0), (0xBC, -1.0), (0x01, 2.0**-16), (0x03, 3 * 2.0**-16), (0x04, 2.0**-14),
    (0x7B, 57344.0), (0xFB, -57344.0), (0x7C, np.inf), (0xFC, -np.inf), (0x3E, 1.5),
]


@pytest.mark.parametrize(("bits", "value"), E4M3)
def test_fp8_e4m3fn_decodes_per_the_ocp_spec(bits, value):
    decoded = dtypes.to_float64(patterns("float8_e4m3", [bits]), dtypes.lookup("float8_e4m3"))[0]
    assert decoded == value and np.signbit(decoded) == np.signbit(value)


@pytest.mark.parametrize(("bits", "value"), E5M2)
def test_fp8_e5m2_decodes_per_the_ocp_spec(bits, value):
    decoded = dtypes.to_float64(patterns("float8_e5m2", [bits]), dtypes.lookup("float8_e5m2"))[0]
    assert decoded == value and np.signbit(decoded) == np.signbit(value)


def test_fp8_nan_patterns_are_exactly_the_specs():
    assert sorted(np.flatnonzero(np.isnan(dtypes.FP8_E4M3))) == [0x7F, 0xFF]  # e4m3fn: no infinities
    assert not np.isinf(dtypes.FP8_E4M3).any()
    assert sorted(np.flatnonzero(np.isnan(dtypes.FP8_E5M2))) == [0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF]


def test_fp8_positive_patterns_increase_with_their_bits():
    for table, last_finite in ((dtypes.FP8_E4M3, 0x7E), (dtypes.FP8_E5M2, 0x7B)):
        positive = table[: last_finite + 1]
        assert (np.diff(positive) > 0).all()
        assert (table[0x80 : 0x80 + last_finite + 1] == -positive).all()


# --- close ----------------------------------------------------------------------------------

def close(ref, cand, dtype="float32", **tolerance):
    ref, cand = np.asarray(ref), np.asarray(cand)
    return compare.close(ref, cand, dtype, dtype, ref.shape, cand.shape, **tolerance)


def steps(value: float, n: int, dtype=np.float32) -> np.ndarray:
    out = np.asarray(value, dtype=dtype)
    for _ in range(n):
        out = np.nextafter(out, dtype(np.inf))
    return out


def test_close_within_atol_holds_and_reports_errors():
    ref = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    result = close(ref, ref + np.float32(0.25), atol=0.5)
    assert (result.values, result.differing) == (3, 0)
    assert result.max_abs_error == 0.25 and result.max_rel_error == 0.25
    assert result.describe().startswith("3 values, 0 outside tolerance; max abs error 0.25")


def test_close_outside_tolerance_reports_first_values_and_bit_patterns():
    ref = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    cand = np.array([1.0, 2.5, 5.0], dtype=np.float32)
    result = close(ref, cand, rtol=0.1)
    assert (result.differing, result.first_index) == (2, 1)
    assert (result.reference_value, result.candidate_value) == (2.0, 2.5)
    assert (result.reference_bits, result.candidate_bits) == ("0x40000000", "0x40200000")
    assert result.max_abs_error == 1.0 and result.max_rel_error == 0.25
    assert "2 outside tolerance; first at index 1 [1]: reference 2.0 (0x40000000) candidate 2.5 (0x40200000)" in (
        result.describe()
    )


@pytest.mark.parametrize(("n", "outside"), [(0, 0), (1, 0), (2, 0), (3, 1)])
def test_close_max_ulp_counts_steps_of_the_dtype(n, outside):
    result = close(np.array([1.0], np.float32), steps(1.0, n).reshape(1), rtol=0, atol=0, max_ulp=2)
    assert result.differing == outside
    assert result.max_ulp == n


def test_ulp_distance_crosses_zero_and_treats_signed_zeros_as_equal():
    tiny = np.float32(np.nextafter(np.float32(0), np.float32(1)))
    assert close(np.array([-tiny]), np.array([tiny]), max_ulp=2).max_ulp == 2
    zeros = close(np.array([0.0], np.float32), np.array([-0.0], np.float32))
    assert (zeros.differing, zeros.max_ulp) == (0, 0)


def test_ulp_distance_across_the_whole_float64_range_does_not_overflow():
    big = np.finfo(np.float64).max
    result = close(np.array([-big]), np.array([big]), dtype="float64", max_ulp=0)
    assert result.max_ulp == 2 * 0x7FEFFFFFFFFFFFFF
    assert result.differing == 1


def test_nan_is_never_close_not_even_to_the_same_nan():
    nan = f32(0x7FC00000)
    result = close(nan, nan.copy(), atol=1e30, max_ulp=1 << 30)
    assert result.differing == 1
    assert result.max_abs_error is None  # no comparable pair


def test_infinity_is_close_only_to_the_same_infinity():
    big = np.finfo(np.float32).max
    assert close(np.array([np.inf], np.float32), np.array([np.inf], np.float32)).differing == 0
    assert close(np.array([big], np.float32), np.array([np.inf], np.float32), max_ulp=10).differing == 1
    assert close(np.array([-np.inf], np.float32), np.array([np.inf], np.float32), atol=1e38).differing == 1
    # rtol * |inf| is inf: an infinite reference must not accept every finite candidate.
    assert close(np.array([np.inf], np.float32), np.array([1.0], np.float32), rtol=0.1).differing == 1


def test_close_on_int64_measures_error_exactly_beyond_2_to_the_53():
    ref = np.array([2**62], dtype=np.int64)
    cand = np.array([2**62 + 1], dtype=np.int64)
    assert close(ref, cand, dtype="int64").differing == 1
    assert close(ref, cand, dtype="int64", atol=1).differing == 0


def test_close_on_uint64_extremes():
    result = close(np.array([0], np.uint64), np.array([2**64 - 1], np.uint64), dtype="uint64", max_ulp=0)
    assert (result.differing, result.max_ulp) == (1, 2**64 - 1)


@pytest.mark.parametrize(
    ("dtype", "one", "one_step_up"),
    [("bfloat16", 0x3F80, 0x3F81), ("float8_e4m3", 0x38, 0x39), ("float8_e5m2", 0x3C, 0x3D), ("float16", 0x3C00, 0x3C01)],
)
def test_close_decodes_narrow_floats_and_counts_their_ulps(dtype, one, one_step_up):
    ref, cand = patterns(dtype, [one, one]), patterns(dtype, [one, one_step_up])
    strict = close(ref, cand, dtype=dtype)
    assert (strict.differing, strict.first_index, strict.reference_value) == (1, 1, 1.0)
    assert strict.max_ulp == 1
    assert close(ref, cand, dtype=dtype, max_ulp=1).differing == 0


def test_close_dtype_and_shape_mismatch_compare_nothing():
    a = np.zeros(3, np.float32)
    assert compare.close(a, a, "float32", "float16", [3], [3]).mismatch is not None
    assert compare.close(a, a, "float32", "float32", [3], [1, 3]).mismatch is not None


def test_close_on_empty_arrays_compares_zero_values():
    empty = np.zeros(0, np.float32)
    result = close(empty, empty)
    assert (result.values, result.differing, result.max_abs_error) == (0, 0, None)
    assert result.describe() == "0 values, 0 outside tolerance" and not result.holds


def test_close_in_blocks_reports_exactly_what_one_block_reports(monkeypatch):
    rng = np.random.default_rng(11)
    ref = rng.standard_normal(1000).astype(np.float32)
    cand = ref + rng.standard_normal(1000).astype(np.float32) * np.float32(1e-6)
    cand[[5, 517, 998]] = [np.nan, np.inf, 3.0]
    ref[700] = np.inf
    cand[700] = np.inf
    whole = close(ref, cand, rtol=1e-7, max_ulp=8)
    monkeypatch.setattr(compare, "CLOSE_BLOCK", 7)
    blocked = close(ref, cand, rtol=1e-7, max_ulp=8)
    assert blocked == whole
    assert blocked.differing > 3 and blocked.max_ulp is not None and blocked.max_ulp > 8


def test_close_reports_the_first_value_outside_in_a_later_block(monkeypatch):
    monkeypatch.setattr(compare, "CLOSE_BLOCK", 4)
    ref = np.zeros(10, np.float32)
    cand = ref.copy()
    cand[9] = 1.0
    cand[6] = 2.0
    result = close(ref, cand, atol=0.5)
    assert (result.differing, result.first_index, result.candidate_value) == (2, 6, 2.0)
    assert result.max_abs_error == 2.0
