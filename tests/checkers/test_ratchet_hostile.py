"""A ratchet baseline nested past every bound is no baseline (issue 34, third round): it was a
RecursionError out of the checker; now the reason, as for any baseline that is not JSON."""

from __future__ import annotations

from redfirst.checkers.ratchets import read_baseline


def test_a_deeply_nested_baseline_is_a_reason_not_a_recursion_error() -> None:
    why = read_baseline('{"buckets":\n' + "[" * 100_000 + "]" * 100_000 + "}")
    assert isinstance(why, str) and "nested deeper" in why


def test_a_baseline_key_written_twice_is_still_refused() -> None:
    why = read_baseline('{"total": 9,\n "total": 1}')
    assert isinstance(why, str) and "total" in why
