"""How the engine hands mutations to its workers (engine.Shares): each worker runs one contiguous
share of the selection in order (a gate's mutations are neighbours there, so a warm process's
standby guesses its next run right), a worker that is done takes half of the largest share left,
and every mutation runs exactly once whatever order the workers ask in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from redfirst.mutations.engine import Shares


def test_each_worker_starts_with_its_own_contiguous_share_in_order() -> None:
    # (one queue for all would hand out 0, 1, 2, ... in the order the workers ask)
    shares = Shares(list(range(10)), 3)       # 0-3, 4-6, 7-9
    asked = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert [shares.take(w) for w in asked] == [0, 4, 7, 1, 5, 8, 2, 6, 9, 3]


def test_a_worker_that_is_done_takes_the_second_half_of_the_largest_share_in_order() -> None:
    shares = Shares(list(range(12)), 2)      # 0-5 and 6-11
    assert [shares.take(0) for _ in range(6)] == [0, 1, 2, 3, 4, 5]
    assert shares.take(1) == 6
    # worker 1 has 7-11 left: worker 0 takes 10 and 11 in order, then 9 of the 7-9 left
    assert [shares.take(0) for _ in range(3)] == [10, 11, 9]
    assert [shares.take(1) for _ in range(2)] == [7, 8]
    assert shares.take(0) is None and shares.take(1) is None


@given(st.integers(0, 60), st.integers(1, 5), st.lists(st.integers(0, 4), max_size=200))
def test_every_mutation_is_taken_exactly_once(n: int, workers: int, order: list[int]) -> None:
    shares = Shares(list(range(n)), workers)
    taken = []
    for w in [w % workers for w in order] + list(range(workers)) * (n + 1):
        item = shares.take(w)
        if item is not None:
            taken.append(item)
    assert sorted(taken) == list(range(n))


def test_a_worker_s_next_mutation_is_known_before_it_takes_it() -> None:
    # (the engine names it to the gate engine: GateRequest.then, collected ahead by pytest-warm)
    shares = Shares(list(range(6)), 2)      # 0-2 and 3-5
    assert (shares.peek(0), shares.take(0), shares.peek(0), shares.take(0)) == (0, 0, 1, 1)
    assert [shares.take(0), shares.peek(0)] == [2, None]      # its share is done: nothing known
    assert shares.take(0) == 5                              # a steal the peek could not know
