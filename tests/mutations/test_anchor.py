from __future__ import annotations

import pytest

from redfirst.mutations.anchor import AnchorError, apply_anchor

TEXT = "a = 1\nb = a + 1\nc = a + 1\n"


def test_anchor_replaced_exactly_once_with_line_and_diffstat():
    applied = apply_anchor("x = 0\nb = a + 1\n", "b = a + 1\n", "b = a - 1\n")
    assert applied.text == "x = 0\nb = a - 1\n"
    assert applied.line == 2
    assert applied.diffstat == "+1 -1"


def test_missing_anchor_is_an_error_naming_it():
    with pytest.raises(AnchorError, match="anchor not found: 'd = 4'"):
        apply_anchor(TEXT, "d = 4\n", "d = 5\n")


def test_ambiguous_anchor_without_occurrence_is_an_error_with_lines():
    with pytest.raises(AnchorError, match=r"ambiguous: 2 occurrences \(lines 2, 3\)"):
        apply_anchor(TEXT, "= a + 1\n", "= a - 1\n")


def test_occurrence_picks_the_nth_and_too_few_is_an_error():
    assert apply_anchor(TEXT, "= a + 1\n", "= a - 1\n", occurrence=2).text == "a = 1\nb = a + 1\nc = a - 1\n"
    with pytest.raises(AnchorError, match="occurrence 3 asked, the anchor occurs 2"):
        apply_anchor(TEXT, "= a + 1\n", "= a - 1\n", occurrence=3)


def test_anchor_is_literal_including_indentation():
    code = "def f():\n    return 1\n"
    with pytest.raises(AnchorError):
        apply_anchor(code, "  return 1\n  ", "return 2")
    assert apply_anchor(code, "    return 1\n", "    return 2\n").text == "def f():\n    return 2\n"


def test_an_empty_anchor_is_an_error_not_an_endless_search():
    with pytest.raises(AnchorError, match="anchor is empty"):
        apply_anchor(TEXT, "", "x")


def test_an_empty_ad_hoc_anchor_is_a_usage_error(repo):
    from mutate_helpers import mutate

    proc = mutate(repo, "--file", "calc/__init__.py", "--anchor", "", "--replace", "x", "--gate", "add")
    assert proc.returncode == 2, proc.stderr
    assert "--anchor is empty" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_overlapping_occurrences_make_an_anchor_ambiguous():
    # "x = 1\nx = 1\n" occurs at line 1 and at line 2 of three equal lines: not unique.
    with pytest.raises(AnchorError, match=r"ambiguous: 2 occurrences \(lines 1, 2\)"):
        apply_anchor("x = 1\nx = 1\nx = 1\n", "x = 1\nx = 1\n", "y\n")
    assert apply_anchor("x = 1\nx = 1\nx = 1\n", "x = 1\nx = 1\n", "y\n", occurrence=2).text == "x = 1\ny\n"


def test_an_occurrence_with_a_decimal_point_is_a_file_error_not_a_traceback(repo):
    # helper-15 finding 10: JSON Schema's integer takes 1.0, and `mutate` then failed in the anchor
    # code with a TypeError traceback
    from mutate_helpers import mutate, write

    write(repo, "mutations/float.yaml", "- mutation: add-minus\n  file: calc/__init__.py\n  anchor: \"a + b\"\n"
                                        "  replace: \"a - b\"\n  occurrence: 1.0\n  expect: {red: [add]}\n")
    for args in ((), ("check",)):
        proc = mutate(repo, *args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr
        assert "mutations/float.yaml:5" in proc.stderr and "whole number" in proc.stderr, proc.stderr
