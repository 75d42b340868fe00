"""`mutate sweep` drops a survivor that changes only a message (an exception's, a log line's, a
warning's, what is printed, an assert's), never one that changes a value the code returns,
compares or passes on (issue 33: string mutants that were return values or comparison operands
were dropped as messages, hiding real survivors)."""

from __future__ import annotations

import pytest

from redfirst.mutations.mutmut import only_message_strings


@pytest.mark.parametrize("before, after", [
    ('    raise ValueError("bad input")', '    raise ValueError("XXbad inputXX")'),
    ('    raise Custom(f"no {name}")', '    raise Custom(None)'),
    ('    logger.info("loaded %s", name)', '    logger.info("XXloaded %sXX", name)'),
    ('    log.warning("slow")', '    log.warning(None)'),
    ('    warnings.warn("old", DeprecationWarning)', '    warnings.warn("XXoldXX", DeprecationWarning)'),
    ('    print("done", file=sys.stderr)', '    print("XXdoneXX", file=sys.stderr)'),
    ('    assert x > 0, "x must be positive"', '    assert x > 0, "XXx must be positiveXX"'),
    ('    print(", ".join(["a", str(n)]))', '    print("XX, XX".join(["a", str(n)]))'),
])
def test_a_string_that_is_a_message_is_suppressed(before: str, after: str):
    assert only_message_strings((before,), (after,))


@pytest.mark.parametrize("before, after", [
    ('    return "ok"', '    return "XXokXX"'),
    ('    if mode == "fast":', '    if mode == "XXfastXX":'),
    ('    return {"key": 1}', '    return {"XXkeyXX": 1}'),
    ('    cfg = load("settings.toml")', '    cfg = load("XXsettings.tomlXX")'),
    ('    return sep.join(parts) + "/"', '    return sep.join(parts) + "XX/XX"'),
    ('    raise ValueError(compute("k"))', '    raise ValueError(compute("XXkXX"))'),
    ('    assert parse("1") == 1', '    assert parse("XX1XX") == 1'),
])
def test_a_string_the_code_uses_is_kept(before: str, after: str):
    assert not only_message_strings((before,), (after,))
