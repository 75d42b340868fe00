"""mutmut as a generator of candidate mutations, driven as a subprocess (never imported).

mutmut runs in a scratch worktree under a configuration written there (the user's
`setup.cfg` / `pyproject.toml` are never edited), limited to the Python files a change
touches; its result files (`mutants/**/*.meta`, `mutants/mutmut-stats.json`) and
`mutmut show` diffs are read back into `Survivor` records.
"""

from __future__ import annotations

import ast
import configparser
import io
import os
import re
import subprocess
import sys
import tokenize
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

from redfirst.yamlsrc import YamlError, load_json, load_toml_text, read_text

PINNED = "3.8.1"
# mutmut's exit codes of mutants nothing killed: survived, and "no tests" (5, 33).
NOT_KILLED = {0: "survived", 5: "no tests", 33: "no tests"}
# Codes mutmut decided as a kill: a failing test run, its type check, a segfault. Any other
# code (None: not checked, timeout, skipped, suspicious, interrupted) is a mutant mutmut gave
# no verdict on: never a kill, never a survivor. pytest's internal error (3) is one: mutmut
# counts it killed, but it is pytest or a plugin failing (a hook that raised), not a test.
KILLED = {1: "killed", 37: "caught by type check", -11: "segfault"}
# mutmut's own names of the undecided codes (mutmut.stats.status_by_exit_code), for counts.
UNDECIDED = {None: "not checked", 2: "interrupted", 3: "pytest internal error", 34: "skipped", 35: "suspicious",
             36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", -9: "killed by SIGKILL"}


def undecided_status(code: int | None) -> str:
    return UNDECIDED.get(code, "suspicious")
# Lines mutmut leaves alone: logging calls say nothing a gate should pin down.
LOGGING_PATTERNS = (r"\b(logging|logger|log|LOG|_log|_logger)\.(debug|info|warning|warn|error|exception|critical|log)\(",)


class MutmutError(Exception):
    """mutmut is missing, the wrong version, or failed: a message, exit 2."""


@dataclass(frozen=True)
class Survivor:
    key: str                   # mutmut's mutant name, e.g. calc.x_add__mutmut_3
    file: str                  # relative to the root
    line: int                  # first changed line in the file
    removed: tuple[str, ...]   # the original lines the mutant changes
    added: tuple[str, ...]     # what mutmut put there
    function: str              # mutmut's mangled function name, e.g. calc.x_add
    tests: tuple[str, ...]     # tests that reach the function (mutmut's test map)
    status: str = "survived"   # or "no tests": no test reaches the function at all
    gates: tuple[str, ...] = ()  # a C/C++/CUDA survivor's (redfirst.mutations.cxx_sweep): the gates that build it

    def record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> Survivor:
        return cls(d["key"], d["file"], d["line"], tuple(d["removed"]), tuple(d["added"]), d["function"],
                   tuple(d["tests"]), d.get("status", "survived"), tuple(d.get("gates", ())))


def check_installed() -> str:
    try:
        version = metadata.version("mutmut")
    except metadata.PackageNotFoundError:
        raise MutmutError(f"mutmut is not installed: pip install mutmut=={PINNED}") from None
    if version.split(".")[0] != "3":
        raise MutmutError(f"mutmut {version} found; mutate drives mutmut 3 (pinned {PINNED})")
    return version


# Set by the sweep: what mutmut mutates, which tests it runs, and no process titles.
_OWN_KEYS = ("source_paths", "only_mutate", "pytest_add_cli_args_test_selection", "tests_dir", "paths_to_mutate",
             "use_setproctitle")


def user_settings(scratch: Path) -> dict[str, str]:
    """The user's own mutmut settings, where mutmut 3 reads them (pyproject's [tool.mutmut]
    first, else setup.cfg's [mutmut]), as setup.cfg values: do_not_mutate, the timeouts,
    extra pytest arguments and the rest are the user's choice, not the sweep's."""
    pyproject = scratch / "pyproject.toml"
    try:
        tool = load_toml_text(read_text(pyproject), pyproject).get("tool") \
            if pyproject.is_file() else None
    except YamlError as e:
        raise MutmutError(f"{e}: the mutmut settings cannot be read") from None
    table = tool.get("mutmut") if isinstance(tool, dict) else None
    if isinstance(table, dict):
        def text(value: Any) -> str:
            if isinstance(value, list):
                return "\n" + "\n".join(str(v) for v in value)
            return str(value).lower() if isinstance(value, bool) else str(value)
        return {str(k): text(v) for k, v in table.items()}
    cfg = configparser.ConfigParser(interpolation=None)
    setup = scratch / "setup.cfg"
    if setup.is_file():
        cfg.read(setup, encoding="utf-8")
    return dict(cfg["mutmut"]) if cfg.has_section("mutmut") else {}


def setting_lines(value: str) -> list[str]:
    """A list setting as user_settings gives it (one item a line), as a list."""
    return [line.strip() for line in value.splitlines() if line.strip()]


# pytest's configuration files (_pytest.config.findpaths): mutmut copies only setup.cfg and
# pyproject.toml; left out, pytest in mutmut's copy finds the one above it, whose `pythonpath`
# and `testpaths` point at the unmutated tree.
PYTEST_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def carried(scratch: Path, source_paths: Sequence[str], tests: Sequence[str]) -> list[str]:
    """What mutmut's copy (`mutants/`) gets besides the source paths it copies itself: every
    pytest configuration file at the root, and the top-level entry (a file, or the folder it
    lies in) holding each conftest.py and each gate test target. A caller may rely on pytest in
    mutmut's copy reading the same configuration and conftest files, and finding the same tests,
    as in the tree, without the user's `also_copy`; nothing under a source path is listed (mutmut
    copies those, and a copy over them would hide a mutant), nor mutmut's own `mutants/`."""
    own = {PurePosixPath(p).parts[0] for p in source_paths if PurePosixPath(p).parts}
    found: list[str] = [name for name in PYTEST_FILES if (scratch / name).is_file()]

    def keep(rel: PurePosixPath) -> None:
        top = rel.parts[0] if rel.parts else ""
        if top and top not in own and top != "mutants" and top not in found and (scratch / top).exists():
            found.append(top)

    for folder, dirs, files in os.walk(scratch):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("mutants", "__pycache__")
                         and not (Path(folder) == scratch and d in own))
        if "conftest.py" in files:
            keep(PurePosixPath(Path(folder, "conftest.py").relative_to(scratch).as_posix()))
    for target in tests:
        keep(PurePosixPath(target.split("::")[0]))
    return found


def write_config(scratch: Path, source_paths: list[str], only: list[str], tests: list[str]) -> None:
    """Our own [mutmut] section in the scratch copy, over the user's own settings (kept,
    lists of patterns and copied files joined with ours); any other configuration is kept."""
    user = user_settings(scratch)
    pyproject = scratch / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        # mutmut prefers [tool.mutmut] over setup.cfg: drop it from the copy (its settings move to setup.cfg).
        pyproject.write_text(re.sub(r"(?ms)^\[tool\.mutmut(\.[^\]]*)?\]\n.*?(?=^\[|\Z)", "", text), encoding="utf-8")
    cfg = configparser.ConfigParser(interpolation=None)
    setup = scratch / "setup.cfg"
    if setup.is_file():
        cfg.read(setup, encoding="utf-8")
    if cfg.has_section("mutmut"):
        cfg.remove_section("mutmut")
    also = carried(scratch, source_paths, tests)
    also += [p for p in ("gates", "config.json", *setting_lines(user.get("also_copy", "")))
             if p not in also and (p not in ("gates", "config.json") or (scratch / p).exists())]
    patterns = [*LOGGING_PATTERNS, *(p for p in setting_lines(user.get("do_not_mutate_patterns", ""))
                                     if p not in LOGGING_PATTERNS)]
    kept = {k: v for k, v in user.items() if k not in _OWN_KEYS and k not in ("also_copy", "do_not_mutate_patterns")}
    cfg["mutmut"] = {
        **kept,
        "source_paths": "\n" + "\n".join(source_paths),
        "only_mutate": "\n" + "\n".join(only),
        "do_not_mutate_patterns": "\n" + "\n".join(patterns),
        "also_copy": "\n" + "\n".join(also) if also else "",
        "pytest_add_cli_args_test_selection": "\n" + "\n".join(tests) if tests else "",
        "use_setproctitle": "false",
    }
    if not also:
        cfg.remove_option("mutmut", "also_copy")
    if not tests:
        cfg.remove_option("mutmut", "pytest_add_cli_args_test_selection")
    with open(setup, "w", encoding="utf-8") as f:
        cfg.write(f)


def run(scratch: Path, timeout: float, jobs: int | None = None,
        names: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """`mutmut run` in the scratch copy; `names`: only these mutants (its stats run maps every test)."""
    argv = [sys.executable, "-m", "mutmut", "run"] + ([f"--max-children={jobs}"] if jobs else []) + list(names)
    try:
        proc = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise MutmutError(f"mutmut run did not finish in {timeout:.0f}s") from None
    # mutmut writes its .meta files before it runs a test: an aborted run leaves them, every mutant unchecked.
    tail = " | ".join(line.strip() for line in (proc.stdout + proc.stderr).strip().splitlines()[-5:] if line.strip())
    if proc.returncode != 0:
        raise MutmutError(f"mutmut run aborted (exit {proc.returncode}), nothing it reported is a verdict: {tail}")
    if not list((scratch / "mutants").rglob("*.meta")):
        raise MutmutError("mutmut run produced no results: " + tail)
    return proc


def exit_codes(scratch: Path) -> dict[str, tuple[str, int | None]]:
    """mutant key -> (file relative to the scratch root, mutmut's exit code)."""
    found: dict[str, tuple[str, int | None]] = {}
    mutants = scratch / "mutants"
    for meta in sorted(mutants.rglob("*.meta")):
        rel = str(meta.relative_to(mutants))[: -len(".meta")]
        for key, code in _mapping(meta, "exit_code_by_key").items():
            found[key] = (rel, code)
    return found


def _mapping(file: Path, field: str) -> dict[str, Any]:
    """The object `field` of mutmut's JSON `file`; MutmutError naming the file when it cannot be read
    (a FIFO, nesting past the bound, a key twice, not an object): a harness failure, never a
    mutant without an exit code (the code under test runs in the scratch tree and can write there)."""
    try:
        data = load_json(file)
    except YamlError as e:
        raise MutmutError(f"mutmut's {file.name} cannot be read: {e}") from None
    value = data.get(field, {}) if isinstance(data, dict) else None
    if not isinstance(value, dict):
        raise MutmutError(f"{file}:1: mutmut's {file.name} has no `{field}` object")
    return value


def tests_by_function(scratch: Path) -> dict[str, list[str]]:
    stats = scratch / "mutants" / "mutmut-stats.json"
    if not stats.is_file():
        return {}
    by_name = _mapping(stats, "tests_by_mangled_function_name")
    try:
        return {k: sorted(map(str, v)) for k, v in by_name.items()}
    except TypeError:
        raise MutmutError(f"{stats}:1: mutmut's {stats.name} lists a function's tests as no list") from None


def show(scratch: Path, key: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "mutmut", "show", key], cwd=scratch, capture_output=True,
                          text=True, timeout=120, check=False)
    return proc.stdout


def mutant_functions(scratch: Path, rel: str) -> dict[str, tuple[list[str], list[str]]]:
    """From mutmut's generated copy `mutants/<rel>`: mutant name (without module) ->
    (original function lines, mutated function lines), `def` lines renamed back."""
    try:
        text = (scratch / "mutants" / rel).read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    lines = text.splitlines()
    bodies: list[list[ast.stmt]] = [tree.body, *(n.body for n in tree.body if isinstance(n, ast.ClassDef))]
    found: dict[str, tuple[list[str], list[str]]] = {}
    for body in bodies:
        funcs = {n.name: n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        for name, node in funcs.items():
            m = re.match(r"^(.*)__mutmut_(\d+)$", name)
            orig = funcs.get(f"{m.group(1)}__mutmut_orig") if m else None
            if m is None or orig is None:
                continue
            original = m.group(1).split("ǁ")[-1] if "ǁ" in m.group(1) else m.group(1)[2:]

            def source(n: ast.AST, original: str = original) -> list[str]:
                seg = lines[n.lineno - 1:n.end_lineno]  # type: ignore[attr-defined]
                return [re.sub(r"def \S+?\(", f"def {original}(", seg[0], count=1), *seg[1:]]

            found[name] = (source(orig), source(node))
    return found


def function_diff(original: list[str], mutated: list[str]) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    """(line of the first change counted from the `def` line as 1, removed, added)."""
    import difflib

    ops = [op for op in difflib.SequenceMatcher(a=original, b=mutated, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if not ops:
        return None
    first, last = ops[0], ops[-1]
    return first[1] + 1, tuple(original[first[1]:last[2]]), tuple(mutated[first[3]:last[4]])


def parse_show(diff: str) -> tuple[int, tuple[str, ...], tuple[str, ...]] | None:
    """(line of the first change relative to the hunk start, removed lines, added lines)."""
    lines = diff.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("@@")]
    if not starts:
        return None
    m = re.match(r"@@ -(\d+)", lines[starts[0]])
    old = int(m.group(1)) if m else 1
    removed: list[str] = []
    added: list[str] = []
    first: int | None = None
    for line in lines[starts[0] + 1:]:
        if line.startswith("-"):
            first = old if first is None else first
            removed.append(line[1:])
            old += 1
        elif line.startswith("+"):
            first = old if first is None else first
            added.append(line[1:])
        elif first is not None:
            break
        else:
            old += 1
    if first is None:
        return None
    return first, tuple(removed), tuple(added)


def function_line(source: str, mangled: str) -> int | None:
    """The `def` line of mutmut's mangled function name (x_f, or xǁClassǁmethod)."""
    name = mangled.rsplit(".", 1)[-1]
    parts = name[1:].split("ǁ") if name.startswith("xǁ") else [name[2:] if name.startswith("x_") else name]
    parts = [p for p in parts if p]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    scope: list[ast.stmt] = list(tree.body)
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        for node in scope:
            if last and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == part:
                return node.lineno
            if not last and isinstance(node, ast.ClassDef) and node.name == part:
                scope = list(node.body)
                break
        else:
            return None
    return None


def _tokens(lines: tuple[str, ...]) -> list[tuple[int, str]] | None:
    try:
        return [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
                if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                  tokenize.ENDMARKER, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def only_message_strings(removed: tuple[str, ...], added: tuple[str, ...]) -> bool:
    """True when the mutant changes nothing but string literals (or a string into None) that are
    messages: an argument of an exception raised or built, a logging or warnings call, `print`, or
    an assert's message. A string the code returns, compares, indexes with or passes to anything
    else is behaviour, and its survivor is kept."""
    a, b = _tokens(tuple(x.strip() for x in removed)), _tokens(tuple(x.strip() for x in added))
    if a is None or b is None or len(a) != len(b):
        return False
    diffs = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return bool(diffs) and all(a[i][0] == tokenize.STRING and (b[i][0] == tokenize.STRING or b[i] == (tokenize.NAME, "None"))
                               and _a_message(a, i) for i in diffs)


# Calls whose string arguments are messages: logging's and warnings' functions, print, and any
# callable named like an exception or warning class.
_MESSAGE_CALLS = frozenset({"print", "warn", "debug", "info", "warning", "error", "exception", "critical", "fatal",
                            "log"})
_MESSAGE_CLASS = re.compile(r"(?:Error|Exception|Warning)$")


def _a_message(tokens: list[tuple[int, str]], index: int) -> bool:
    """Whether the string token at `index` is a message (see only_message_strings)."""
    depth = 0
    for i in range(index - 1, -1, -1):
        text = tokens[i][1]
        if text in (")", "]", "}"):
            depth += 1
        elif text in ("(", "[", "{"):
            if depth:
                depth -= 1
                continue
            if text != "(" or i == 0 or tokens[i - 1][0] != tokenize.NAME or tokens[i - 1][1] in ("if", "and", "or",
                                                                                                  "not", "in", "return"):
                return False        # inside a literal, a grouping or a subscript: a value
            name = tokens[i - 1][1]
            raised = tokens[0] == (tokenize.NAME, "raise") and all(t[1] != "(" for t in tokens[1:i])
            return name in _MESSAGE_CALLS or bool(_MESSAGE_CLASS.search(name)) or raised
    # At the top level of the statement: only an assert's message (after its top-level comma).
    if tokens[0] != (tokenize.NAME, "assert"):
        return False
    depth = 0
    for _, text in tokens[1:index]:
        depth += text in ("(", "[", "{")
        depth -= text in (")", "]", "}")
        if text == "," and depth == 0:
            return True
    return False


def is_logging(lines: tuple[str, ...]) -> bool:
    return any(re.search(p, line) for p in LOGGING_PATTERNS for line in lines)
