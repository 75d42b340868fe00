"""C, C++ and CUDA mutants of the lines a change touches, found on tree-sitter's syntax tree
(never on regular expressions): mull's core operators, each named as mull names it.

Left alone: preprocessor lines (`#define` bodies, `#if` conditions, includes), comments, string
and character literals, `static_assert` and template arguments (constant expressions whose
mutants do not compile or do not change the program). Code inside a macro's arguments is code
and is mutated. tree-sitter has no types: `cxx_remove_void_call` removes a call whose value its
statement discards, and `cxx_replace_return` only returns of functions declared with a scalar or
pointer type."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import cache

# Which grammar reads which suffix: CUDA's grammar is C++'s with launches and qualifiers.
SUFFIXES = {".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".h": "cpp", ".hh": "cpp", ".hpp": "cpp",
            ".cu": "cuda", ".cuh": "cuda"}

# operator token -> (its mutants: (replacement, mull's operator name))
_BINARY: dict[str, tuple[tuple[str, str], ...]] = {
    "+": (("-", "cxx_add_to_sub"),), "-": (("+", "cxx_sub_to_add"),),
    "*": (("/", "cxx_mul_to_div"),), "/": (("*", "cxx_div_to_mul"),), "%": (("/", "cxx_rem_to_div"),),
    "<": (("<=", "cxx_lt_to_le"), (">=", "cxx_lt_to_ge")), "<=": (("<", "cxx_le_to_lt"), (">", "cxx_le_to_gt")),
    ">": ((">=", "cxx_gt_to_ge"), ("<=", "cxx_gt_to_le")), ">=": ((">", "cxx_ge_to_gt"), ("<", "cxx_ge_to_lt")),
    "==": (("!=", "cxx_eq_to_ne"),), "!=": (("==", "cxx_ne_to_eq"),),
    "&&": (("||", "cxx_logical_and_to_or"),), "||": (("&&", "cxx_logical_or_to_and"),),
    "&": (("|", "cxx_and_to_or"),), "|": (("&", "cxx_or_to_and"),), "^": (("&", "cxx_xor_to_and"),),
    "<<": ((">>", "cxx_lshift_to_rshift"),), ">>": (("<<", "cxx_rshift_to_lshift"),),
}
_ASSIGN: dict[str, tuple[str, str]] = {
    "+=": ("-=", "cxx_add_assign_to_sub_assign"), "-=": ("+=", "cxx_sub_assign_to_add_assign"),
    "*=": ("/=", "cxx_mul_assign_to_div_assign"), "/=": ("*=", "cxx_div_assign_to_mul_assign"),
    "%=": ("/=", "cxx_rem_assign_to_div_assign"), "&=": ("|=", "cxx_and_assign_to_or_assign"),
    "|=": ("&=", "cxx_or_assign_to_and_assign"), "^=": ("&=", "cxx_xor_assign_to_and_assign"),
    "<<=": (">>=", "cxx_lshift_assign_to_rshift_assign"), ">>=": ("<<=", "cxx_rshift_assign_to_lshift_assign"),
}
_UPDATE = {"++": ("--", "cxx_inc_to_dec"), "--": ("++", "cxx_dec_to_inc")}
# Subtrees never mutated: the preprocessor's, compile-time assertions, template arguments, literals.
_LEFT_ALONE = frozenset({"preproc_def", "preproc_function_def", "preproc_call", "preproc_include", "preproc_arg",
                         "static_assert_declaration", "template_argument_list", "string_literal",
                         "raw_string_literal", "char_literal", "concatenated_string", "comment"})
_PREPROC_CONDITIONS = frozenset({"preproc_if", "preproc_elif", "preproc_ifdef", "preproc_elifdef"})
_SCALAR_TYPES = frozenset({"primitive_type", "sized_type_specifier"})
_INT = re.compile(r"(?i)^(0x[0-9a-f']+|0b[01']+|[0-9][0-9']*)([uUlLzZ]*)$")
_FALSY = frozenset({"0", "false", "0u", "0l", "0ul"})


_SPECIAL = {"cxx_remove_negation": "Removed a logical negation (!x to x)",
            "cxx_negate_condition": "Negated a condition (c to !(c))",
            "cxx_const_plus_one": "Added one to an integer constant",
            "cxx_const_minus_one": "Subtracted one from an integer constant",
            "cxx_remove_void_call": "Removed a call whose value is discarded",
            "cxx_replace_return": "Replaced a returned scalar with 0 (or 1 for a 0 or false)",
            "cxx_remove_break": "Removed a break", "cxx_remove_continue": "Removed a continue"}


def operator_text(operator: str) -> str:
    """What the operator `operator` (mull's name, e.g. cxx_ge_to_lt) does, as one sentence."""
    for token, pairs in [*_BINARY.items(), *((t, (p,)) for t, p in (*_ASSIGN.items(), *_UPDATE.items()))]:
        for after, name in pairs:
            if name == operator:
                return f"Replaced {token} with {after}"
    return _SPECIAL.get(operator, f"The mutation operator {operator}")


class ParseError(Exception):
    """The file is not one tree-sitter's grammars read, or not installed: an ERROR, never mutants."""


@dataclass(frozen=True)
class CxxMutant:
    """One edit of a source's bytes: `start`..`end` replaced by `after`; `line` and `col` (1-based,
    in bytes, as gcc counts) where it starts."""

    file: str
    line: int
    col: int
    operator: str
    before: str
    after: str
    start: int
    end: int

    @property
    def key(self) -> str:
        return f"{self.file}:{self.line}:{self.col}:{self.operator}"

    @property
    def description(self) -> str:
        return f"Replaced {_short(self.before)} with {_short(self.after) or '(nothing)'}"

    def apply(self, source: bytes) -> bytes:
        return source[:self.start] + self.after.encode("utf-8", errors="surrogateescape") + source[self.end:]


def _short(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= 60 else one[:57] + "..."


def is_source(file: str) -> bool:
    return os.path.splitext(file)[1].lower() in SUFFIXES


@cache
def _parser(grammar: str) -> object:
    import importlib

    try:
        import tree_sitter
        module = importlib.import_module(f"tree_sitter_{grammar}")
    except ImportError as e:
        raise ParseError(f"tree-sitter's {grammar} grammar is not installed ({e.name}): "
                         "pip install tree-sitter tree-sitter-c tree-sitter-cpp tree-sitter-cuda") from None
    return tree_sitter.Parser(tree_sitter.Language(module.language()))


def mutants(file: str, source: bytes, lines: Collection[int] | None = None) -> list[CxxMutant]:
    """Every mutant of `source` (the file `file`, relative to the root) whose edit starts on one
    of `lines` (1-based; None: every line), in source order. A caller may rely on this: each
    mutant's `apply` changes only bytes outside the subtrees the module's docstring leaves alone,
    and no two mutants have the same key."""
    grammar = SUFFIXES.get(os.path.splitext(file)[1].lower())
    if grammar is None:
        raise ParseError(f"{file}: not a C, C++ or CUDA source ({', '.join(sorted(SUFFIXES))})")
    tree = _parser(grammar).parse(source)  # type: ignore[attr-defined]
    found: dict[str, CxxMutant] = {}
    for node in _walk(tree.root_node):
        for m in _of(file, source, node):
            if (lines is None or m.line in lines) and m.key not in found:
                found[m.key] = m
    return sorted(found.values(), key=lambda m: (m.start, m.operator))


def _walk(node: object) -> Iterator[object]:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in _LEFT_ALONE or n.is_error:  # type: ignore[attr-defined]
            continue
        kids = list(n.children)  # type: ignore[attr-defined]
        if n.type in _PREPROC_CONDITIONS:  # type: ignore[attr-defined]
            cond = n.child_by_field_name("condition") or n.child_by_field_name("name")  # type: ignore[attr-defined]
            kids = [k for k in kids if cond is None or k.id != cond.id]
        yield n
        stack.extend(reversed(kids))


def _text(source: bytes, node: object) -> str:
    return source[node.start_byte:node.end_byte].decode("utf-8", errors="surrogateescape")  # type: ignore[attr-defined]


def _at(file: str, source: bytes, node: object, operator: str, after: str) -> CxxMutant:
    row, col = node.start_point  # type: ignore[attr-defined]
    return CxxMutant(file, row + 1, col + 1, operator, _text(source, node), after,
                     node.start_byte, node.end_byte)  # type: ignore[attr-defined]


def _token(node: object, field: str = "operator") -> object | None:
    return node.child_by_field_name(field)  # type: ignore[attr-defined]


def _of(file: str, source: bytes, node: object) -> Iterator[CxxMutant]:
    kind = node.type  # type: ignore[attr-defined]
    make: Callable[[object, str, str], CxxMutant] = lambda n, op, after: _at(file, source, n, op, after)  # noqa: E731
    if kind == "binary_expression":
        op = _token(node)
        for after, name in _BINARY.get(op.type if op is not None else "", ()):  # type: ignore[attr-defined]
            yield make(op, name, after)
    elif kind == "assignment_expression":
        op = _token(node)
        if op is not None and op.type in _ASSIGN:  # type: ignore[attr-defined]
            after, name = _ASSIGN[op.type]  # type: ignore[attr-defined]
            yield make(op, name, after)
    elif kind == "update_expression":
        op = _token(node)
        if op is not None and op.type in _UPDATE:  # type: ignore[attr-defined]
            after, name = _UPDATE[op.type]  # type: ignore[attr-defined]
            yield make(op, name, after)
    elif kind == "unary_expression":
        op, arg = _token(node), _token(node, "argument")
        if op is not None and arg is not None and op.type == "!":  # type: ignore[attr-defined]
            yield make(node, "cxx_remove_negation", _text(source, arg))
    elif kind == "number_literal":
        yield from _constants(file, source, node)
    elif kind in ("condition_clause", "do_statement", "for_statement", "conditional_expression"):
        cond = _token(node, "value" if kind == "condition_clause" else "condition")
        if cond is not None and cond.type not in ("declaration", "init_statement", "comma_expression"):  # type: ignore[attr-defined]
            yield make(cond, "cxx_negate_condition", f"!({_text(source, cond)})")
    elif kind == "expression_statement":
        named = [c for c in node.children if c.is_named]  # type: ignore[attr-defined]
        if len(named) == 1 and named[0].type == "call_expression":
            yield make(named[0], "cxx_remove_void_call", "")
    elif kind == "return_statement":
        value = next((c for c in node.children if c.is_named), None)  # type: ignore[attr-defined]
        if value is not None and value.type not in ("initializer_list",) and _scalar_function(node):
            text = _text(source, value)
            if text not in ("nullptr", "NULL"):
                yield make(value, "cxx_replace_return", "1" if text in _FALSY else "0")
    elif kind in ("break_statement", "continue_statement"):
        yield make(node, f"cxx_remove_{kind.split('_')[0]}", "")


def _constants(file: str, source: bytes, node: object) -> Iterator[CxxMutant]:
    m = _INT.match(_text(source, node))
    if m is None:
        return
    digits, suffix = m.group(1).replace("'", ""), m.group(2)
    value = int(digits, 16 if digits[:2].lower() == "0x" else 2 if digits[:2].lower() == "0b"
                else 8 if len(digits) > 1 and digits[0] == "0" else 10)

    def spelled(n: int) -> str:
        base = digits[:2].lower()
        return (hex(n) if base == "0x" else bin(n) if base == "0b" else oct(n).replace("0o", "0")
                if len(digits) > 1 and digits[0] == "0" else str(n)) + suffix
    yield _at(file, source, node, "cxx_const_plus_one", spelled(value + 1))
    if value > 0:
        yield _at(file, source, node, "cxx_const_minus_one", spelled(value - 1))


def _scalar_function(node: object) -> bool:
    """Whether the function `node` returns from is declared with a scalar or pointer type."""
    n = node.parent  # type: ignore[attr-defined]
    while n is not None and n.type not in ("function_definition", "lambda_expression"):
        n = n.parent
    if n is None or n.type != "function_definition":
        return False
    declarator = n.child_by_field_name("declarator")
    typ = n.child_by_field_name("type")
    if declarator is not None and declarator.type in ("pointer_declarator", "reference_declarator"):
        return declarator.type == "pointer_declarator"
    return typ is not None and typ.type in _SCALAR_TYPES and _text_of(typ) != b"void"


def _text_of(node: object) -> bytes:
    return bytes(node.text or b"")  # type: ignore[attr-defined]
