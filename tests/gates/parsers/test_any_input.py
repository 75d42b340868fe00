"""Every parser, on any input: never raises, never claims a summary in garbage, same answer for
colour codes and CRLF; and the registry hands out the parser each `format:` names."""

from __future__ import annotations

import random

import pytest

from redfirst.gates.parsers import REGISTRY, Counts, get
from redfirst.gates.parsers._common import guarded, strip_ansi

FORMATS = sorted(REGISTRY)

GARBAGE = [
    "",
    "\n\n\r\r\n",
    "\x00" * 100,
    "Segmentation fault (core dumped)\n",
    "x" * 200_000,
    "\r".join(["progress"] * 1000),
    "[doctest] test cases: 99999999999999999999999 | 1 passed | 0 failed |",
    "test cases: | passed\nassertions:\n",
    "[==========] 3 tests from 1 test suite ran.\n[  PASSED  ] -1 tests.\n",
    "1..99999999999999999999\n",
    "not ok\nok\n1..\nBail\n",
    "<testsuites><testcase></testsuites>",
    "\udcff\udcfe surrogates \ud800",
    "passed, failed\n= in 0.1s =\n",
]


def random_text(seed: int) -> str:
    rng = random.Random(seed)
    alphabet = "ok not 1..|[]=#:%.\n\r\t\x1b[31m passed failed skipped assertions test cases SKIP TODO 0123456789"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4000)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_garbage_never_raises_and_never_shows_a_summary(fmt):
    parser = get(fmt)
    for text in GARBAGE:
        for stdout, stderr, xml in ((text, "", text), ("", text, None), (text, text, text[:50])):
            counts = parser.parse(stdout, stderr, xml)
            assert isinstance(counts, Counts)
            assert not (counts.summary_seen and counts.executed and counts.failed == 0), (fmt, text[:80])


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_text_never_raises(fmt):
    parser = get(fmt)
    for seed in range(200):
        text = random_text(seed)
        assert isinstance(parser.parse(text, text[::-1], text), Counts)


@pytest.mark.parametrize("fmt", FORMATS)
def test_non_text_arguments_do_not_raise(fmt):
    counts = get(fmt).parse(None, b"bytes", None)  # type: ignore[arg-type]
    assert isinstance(counts, Counts) and not counts.summary_seen


def test_a_parser_that_raises_reads_as_no_summary():
    def broken(stdout: str, stderr: str) -> Counts:
        raise ValueError("bug")

    counts = guarded(broken, "1 passed, 0 failed", "")
    assert not counts.summary_seen and "ValueError" in counts.notes[0]


def test_ansi_sequences_are_removed():
    text = "\x1b[1;32mok\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[2K\x1b[Gdone"
    assert strip_ansi(text) == "ok link done"


@pytest.mark.parametrize("fmt", FORMATS)
def test_registry_gives_each_format_its_parser(fmt):
    parser = get(fmt)
    assert parser.name == fmt
    assert parser.reports_assertions == (fmt in {"doctest", "catch2"})


def test_format_none_has_no_parser():
    with pytest.raises(KeyError):
        get("none")
