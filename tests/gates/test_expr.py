"""Bound expressions: whitelisted arithmetic over named values, never eval."""

from __future__ import annotations

import pytest

from redfirst.gates import expr
from redfirst.gates.expr import ExprError


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("num_hidden_layers + 1", {"num_hidden_layers": 28}, 29),
        ("2 * (a - b) // 3", {"a": 10, "b": 1}, 6),
        ("-a + +b", {"a": 3, "b": 5}, 2),
        ("7 / 2", {}, 3.5),
        ("7 // 2", {}, 3),
        ("-7 // 2", {}, -4),
        ("7 % 3", {}, 1),
        ("1.5 * x", {"x": 4}, 6.0),
        ("(((1)))", {}, 1),
        ("  a  ", {"a": 2}, 2),
        ("1e3 + 0.5", {}, 1000.5),
    ],
)
def test_arithmetic_follows_python_semantics(text, values, expected):
    value = expr.parse(text).evaluate(values)
    assert value == expected and type(value) is type(expected)


def test_names_lists_every_name_used():
    assert expr.parse("2 * (a - b) // a + num_hidden_layers").names == frozenset({"a", "b", "num_hidden_layers"})
    assert expr.parse("4").names == frozenset()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a ** 2", "'**' is not supported"),
        ("__import__('os').system('true')", "function calls are not allowed"),
        ("len(a)", "function calls are not allowed"),
        ("a.real", "attribute access is not allowed"),
        ("a[0]", "subscripts are not allowed"),
        ("a < b", "comparisons are not allowed"),
        ("a and b", "'and'/'or' are not allowed"),
        ("'text'", "only numbers are allowed"),
        ("True + 1", "only numbers are allowed, not True"),
        ("None", "only numbers are allowed"),
        ("1j", "only numbers are allowed"),
        ("~a", "operator Invert is not allowed"),
        ("not a", "operator Not is not allowed"),
        ("a << 2", "operator LShift is not allowed"),
        ("a if b else 1", "IfExp is not allowed"),
        ("lambda: 1", "Lambda is not allowed"),
        ("[1, 2]", "List is not allowed"),
        ("(a := 3)", "NamedExpr is not allowed"),
        ("a +", "cannot parse"),
        ("1 +\n2", "cannot parse"),
        ("", "empty expression"),
        ("   ", "empty expression"),
        ("x" * 1001, "longer than 1000"),
        ("-" * 150 + "1", "nested too deeply"),
        ("(" * 300 + "1" + ")" * 300, "cannot parse"),
    ],
)
def test_anything_but_whitelisted_arithmetic_is_refused_at_parse(text, message):
    with pytest.raises(ExprError) as caught:
        expr.parse(text)
    assert message in str(caught.value)


def test_a_refusal_names_the_column():
    with pytest.raises(ExprError) as caught:
        expr.parse("x + a ** 2")
    assert str(caught.value) == "'**' is not supported; write the product out at column 5 in 'x + a ** 2'"


def test_parse_refuses_non_text():
    with pytest.raises(ExprError, match="must be text"):
        expr.parse(3)  # type: ignore[arg-type]


def test_an_unknown_name_is_an_error_at_evaluation():
    parsed = expr.parse("num_hidden_layers + 1")
    with pytest.raises(ExprError, match="unknown name 'num_hidden_layers' in 'num_hidden_layers \\+ 1'"):
        parsed.evaluate({"layers": 28})


@pytest.mark.parametrize("text", ["a / b", "a // b", "a % b", "1 / (b - b)"])
def test_division_by_zero_is_an_error_not_a_number(text):
    with pytest.raises(ExprError, match="division by zero"):
        expr.parse(text).evaluate({"a": 1, "b": 0})


def test_overflow_is_an_error():
    with pytest.raises(ExprError, match="too large"):
        expr.parse("a * 10 // 3.0").evaluate({"a": 10**400})


def test_parsed_expressions_compare_by_text():
    assert expr.parse("a + 1") == expr.parse("a + 1")
    assert expr.parse("a + 1") != expr.parse("a+1")
