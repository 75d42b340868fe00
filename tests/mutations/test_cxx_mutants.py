"""`mutate sweep`'s C, C++ and CUDA mutants (redfirst.mutations.cxx_mutants): mull's core
operators on tree-sitter's tree, only on the lines asked for, never in the preprocessor, a
comment, a string or a static_assert; and DUPLICATE is an outcome of its own, exit 3."""

from __future__ import annotations

import pytest

from redfirst.mutations.cxx_mutants import ParseError, mutants
from redfirst.verdict import EXIT_NO_DECISION, MutationOutcome, exit_code

SOURCE = b"""\
#define LIMIT(a) ((a) + 1 < 8)
#include "calc.h"
static_assert(sizeof(int) >= 4, "ints of 4 bytes");
// a + b < c: a comment
void note(int);
int walk(int n, unsigned m) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (i == 3 && !(m & 1)) continue;
        if (i > 7 || m >> 2) break;
        total += i * 2 - m % 3;
        note(total);
    }
    const char* s = "x + 1 > 2";
    return total / (s[0] ^ 4) << 1;
}
"""


def by_line(found):
    out: dict[int, set[str]] = {}
    for m in found:
        out.setdefault(m.line, set()).add(m.operator)
    return out


def test_each_operator_on_the_lines_asked_for_and_nothing_else():
    found = mutants("src/walk.cpp", SOURCE, {8, 9, 10, 11, 12, 15})
    lines = by_line(found)
    assert set(lines) == {8, 9, 10, 11, 12, 15}
    assert {"cxx_lt_to_le", "cxx_lt_to_ge", "cxx_negate_condition", "cxx_inc_to_dec",
            "cxx_const_plus_one"} <= lines[8]
    assert {"cxx_eq_to_ne", "cxx_logical_and_to_or", "cxx_remove_negation", "cxx_and_to_or",
            "cxx_remove_continue", "cxx_const_minus_one"} <= lines[9]
    assert {"cxx_gt_to_ge", "cxx_gt_to_le", "cxx_logical_or_to_and", "cxx_rshift_to_lshift",
            "cxx_remove_break"} <= lines[10]
    assert {"cxx_add_assign_to_sub_assign", "cxx_mul_to_div", "cxx_sub_to_add", "cxx_rem_to_div"} <= lines[11]
    assert lines[12] == {"cxx_remove_void_call"}
    assert {"cxx_replace_return", "cxx_div_to_mul", "cxx_xor_to_and", "cxx_lshift_to_rshift"} <= lines[15]
    # every mutant's edit is where it says, and applying it changes that text alone
    for m in found:
        assert SOURCE[m.start:m.end].decode() == m.before
        mutated = m.apply(SOURCE)
        assert mutated[:m.start] == SOURCE[:m.start] and mutated[m.start + len(m.after):] == SOURCE[m.end:]
    ge = next(m for m in found if m.operator == "cxx_gt_to_ge")
    assert (ge.line, ge.col, ge.description) == (10, 15, "Replaced > with >=")


def test_macros_comments_strings_and_static_assert_are_left_alone():
    everywhere = mutants("src/walk.cpp", SOURCE)
    assert not [m for m in everywhere if m.line in (1, 2, 3, 4, 14)], [m.key for m in everywhere if m.line < 5]
    assert len({m.key for m in everywhere}) == len(everywhere)


def test_the_grammar_follows_the_suffix_and_cuda_is_read():
    kernel = b"__global__ void k(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = x[i] * 2.0f; }\n" \
             b"void launch(float* x, int n) { k<<<1, 32>>>(x, n); }\n"
    found = mutants("src/k.cu", kernel)
    assert {"cxx_lt_to_le", "cxx_mul_to_div"} <= {m.operator for m in found if m.line == 1}
    # a float is no integer constant: never off by one
    assert not [m for m in found if m.before == "2.0f"]
    c = mutants("src/a.c", b"int f(int a) { return a - 1; }\n")
    assert {m.operator for m in c} == {"cxx_sub_to_add", "cxx_const_plus_one", "cxx_const_minus_one",
                                       "cxx_replace_return"}
    with pytest.raises(ParseError):
        mutants("src/a.py", b"x = 1\n")


def test_duplicate_is_an_outcome_of_its_own_exit_3_like_equivalent():
    assert MutationOutcome("DUPLICATE") is MutationOutcome.DUPLICATE
    assert exit_code([MutationOutcome.DUPLICATE]) == EXIT_NO_DECISION
    assert exit_code([MutationOutcome.DUPLICATE, MutationOutcome.KILLED]) == EXIT_NO_DECISION
