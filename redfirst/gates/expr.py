"""Arithmetic over named values, for `counters` bounds: `num_hidden_layers + 1`, `2 * (a - b) // 3`.

Parsed with Python's `ast` and checked against a whitelist (numbers, names, + - * / // %,
unary + and -, parentheses); evaluated by walking that checked tree. Never `eval`: no
calls, attributes, subscripts, comparisons, strings or booleans. `**` is refused too:
no bound needs it, and it is the one operator that turns a short text into a huge number.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

Number = int | float

_BINARY: dict[type[ast.operator], tuple[str, Callable[[Number, Number], Number]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_REFUSED = {
    ast.Pow: "'**' is not supported; write the product out",
    ast.Call: "function calls are not allowed",
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Compare: "comparisons are not allowed; the bound (equals/min/max) compares",
    ast.BoolOp: "'and'/'or' are not allowed",
}
MAX_LENGTH = 1000
MAX_INT = 2**64  # a larger literal is no count or bound, and overflows a float


class ExprError(ValueError):
    """An expression that cannot be parsed or evaluated; the message says why."""


@dataclass(frozen=True)
class Expr:
    text: str
    names: frozenset[str]
    tree: ast.expr = field(compare=False, repr=False)

    def evaluate(self, values: Mapping[str, Number]) -> Number:
        """The value, with `values` for the names; ExprError for an unknown name or a division by zero."""
        return _evaluate(self.tree, values, self.text)


def parse(text: str) -> Expr:
    """Parse and check an expression; ExprError naming what is not allowed."""
    if not isinstance(text, str):
        raise ExprError(f"an expression must be text, got {type(text).__name__}")
    if not text.strip():
        raise ExprError("empty expression")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression longer than {MAX_LENGTH} characters")
    try:
        module = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        column = f" at column {exc.offset}" if exc.offset else ""
        raise ExprError(f"cannot parse {text!r}{column}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError(f"cannot parse {text!r}: too deeply nested or invalid") from None
    names: set[str] = set()
    _check(module.body, text, names)
    return Expr(text, frozenset(names), module.body)


def _refuse(node: ast.AST, text: str, why: str) -> ExprError:
    column = getattr(node, "col_offset", None)
    at = f" at column {column + 1}" if column is not None else ""
    return ExprError(f"{why}{at} in {text!r}")


def _check(node: ast.AST, text: str, names: set[str], depth: int = 0) -> None:
    if depth > 100:
        raise _refuse(node, text, "expression nested too deeply")
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            why = _REFUSED.get(type(node.op), f"operator {type(node.op).__name__} is not allowed")
            raise _refuse(node, text, why)
        _check(node.left, text, names, depth + 1)
        _check(node.right, text, names, depth + 1)
    elif isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise _refuse(node, text, f"operator {type(node.op).__name__} is not allowed")
        _check(node.operand, text, names, depth + 1)
    elif isinstance(node, ast.Constant):
        # bool is an int subclass: `True + 1` must not read as 2.
        if type(node.value) not in (int, float):
            raise _refuse(node, text, f"only numbers are allowed, not {node.value!r}")
        if type(node.value) is int and abs(node.value) > MAX_INT:
            raise _refuse(node, text, "an integer beyond 2**64 in magnitude")
    elif isinstance(node, ast.Name):
        names.add(node.id)
    else:
        why = _REFUSED.get(type(node), f"{type(node).__name__} is not allowed")
        raise _refuse(node, text, why)


def _evaluate(node: ast.expr, values: Mapping[str, Number], text: str) -> Number:
    if isinstance(node, ast.Constant):
        return node.value  # type: ignore[return-value]  # parse admitted only int and float
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise ExprError(f"unknown name {node.id!r} in {text!r}")
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        return _UNARY[type(node.op)](_evaluate(node.operand, values, text))
    if isinstance(node, ast.BinOp):
        symbol, apply = _BINARY[type(node.op)]
        left, right = _evaluate(node.left, values, text), _evaluate(node.right, values, text)
        try:
            return apply(left, right)
        except ZeroDivisionError:
            raise ExprError(f"division by zero in {text!r} ({left} {symbol} {right})") from None
        except OverflowError:
            raise ExprError(f"number too large in {text!r}") from None
    raise ExprError(f"{type(node).__name__} is not allowed in {text!r}")
