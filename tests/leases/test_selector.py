"""The selector grammar and its comparisons (DESIGN section 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import load
from redfirst.leases.selector import SelectorError, compare, parse


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("gpu_model=h200", {"gpu_model": "H200"}, True),          # values compare case-insensitively
        ("GPU_MODEL=h200", {"gpu_model": "h200"}, True),          # and keys too
        ("gpu_model=h200", {"gpu_model": "h100"}, False),
        ("gpu_model!=h100", {"gpu_model": "h200"}, True),
        ("gpu_model!=h100", {}, False),                            # a missing label never matches, not even !=
        ("cuda>=12.4", {"cuda": "12.10"}, True),                   # versions compare per part
        ("cuda>=12.4", {"cuda": "12.3"}, False),
        ("cuda<=12.4", {"cuda": "12.4.0"}, True),
        ("driver>=550", {"driver": "550.54.15"}, True),
        ("vram>=40G", {"vram": "81559M"}, True),                   # sizes take K/M/G/T
        ("vram>=80G", {"vram": "40960M"}, False),
        ("vram>=40g", {"vram": "1T"}, True),
        ("vram=80G", {"vram": "81920M"}, True),
        ("vram>=40G", {"vram": "[N/A]"}, False),                   # an unknown quantity is not enough
        ("sm>=9.0", {"sm": "9.0"}, True),
        ("sm>=9.0", {"sm": "8.9"}, False),
        ("gpu_model=h200,sm>=9.0", {"gpu_model": "h200", "sm": "9.0"}, True),   # comma is AND
        ("gpu_model=h200,sm>=9.0", {"gpu_model": "h200", "sm": "8.0"}, False),
        ("gpu_model=h200,sm>=9.0", {"gpu_model": "h200"}, False),
    ],
)
def test_selector_matches_labels_by_design_rules(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse(selector).matches(labels) is expected


@pytest.mark.parametrize("bad", ["", "gpu_model", "=h200", "a=", "a=b=c", "a=b,,c=d", "a>>b"])
def test_malformed_selector_is_refused_naming_the_term(bad: str) -> None:
    with pytest.raises(SelectorError):
        parse(bad)


def test_first_unmet_names_the_missing_label() -> None:
    sel = parse("gpu_model=h200,cuda>=12.4")
    unmet = sel.first_unmet({"gpu_model": "h200"})
    assert unmet is not None and str(unmet) == "cuda>=12.4"


def test_numeric_version_order_is_not_lexicographic() -> None:
    assert compare("12.10", ">=", "12.9")
    assert not compare("12.10", "<=", "12.9")


# -- labels and selectors ------------------------------------------------------------------------------


def test_declared_label_values_keep_the_text_written_in_yaml(repo: Path, lease_db: Path) -> None:
    (repo / "redfirst.yaml").write_text(
        "leases:\n  boxes:\n    thor:\n      gpus: 1\n      labels: {cuda: 12.10, fast: yes, sm: 9.0}\n")
    thor = next(b for b in LocalBackend(load(repo)).boxes() if b.name == "thor")
    assert thor.label_map["cuda"] == "12.10" and thor.label_map["fast"] == "yes"
    assert parse("cuda>=12.4,fast=yes,sm>=9.0").matches(thor.label_map)


@pytest.mark.parametrize("have, want", [("h200", "h100"), ("t4", "h100"), ("zeta", "alpha")])
def test_an_ordering_between_words_never_matches(have: str, want: str) -> None:
    assert not compare(have, ">=", want)
    assert not compare(want, "<=", have)


def test_orderings_of_numbers_sizes_and_versions_still_hold() -> None:
    assert compare("12.10", ">=", "12.4") and compare("80GiB", ">=", "64G") and compare("8", "<=", "9")
    assert compare("H200", "=", "h200") and compare("h200", "!=", "h100")
