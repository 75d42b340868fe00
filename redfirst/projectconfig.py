"""The project's configuration: `redfirst.yaml`, or the `[tool.redfirst]` table of `pyproject.toml`
(the same keys, docs/reference.md). gates, mutate, leases and checkers read it through `choose`."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redfirst.yamlsrc import Document, Problem, YamlError, load_text, load_toml_text, read_text

YAML = "redfirst.yaml"
PYPROJECT = "pyproject.toml"
TABLE = ("tool", "redfirst")
_HEADER = re.compile(r"^\[\[?\s*([^\]]+?)\s*\]\]?")
_KEY = re.compile(r"^((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("\"'") for p in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", dotted))


def _toml(text: str, file: Path) -> tuple[dict[str, Any] | None, dict[tuple[Any, ...], int]]:
    """The `[tool.redfirst]` table of a pyproject.toml (None when it has none) and the line of each
    key under it (tables and `key =` lines; a value inside an inline table has its key's line)."""
    data = load_toml_text(text, file)
    table = data.get("tool", {}).get("redfirst") if isinstance(data.get("tool"), dict) else None
    lines: dict[tuple[Any, ...], int] = {}
    current: tuple[str, ...] = ()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if (header := _HEADER.match(line)) is not None:
            current = _parts(header.group(1))
            path = current
        elif (key := _KEY.match(line)) is not None:
            path = (*current, *_parts(key.group(1)))
        else:
            continue
        for depth in range(len(TABLE), len(path) + 1):
            if path[:len(TABLE)] == TABLE:
                lines.setdefault(path[len(TABLE):depth], n)
    return (table if table is not None else None), lines


def document(name: str, text: str, file: Path) -> Document | None:
    """The configuration in `text`, the contents of `name` (redfirst.yaml or pyproject.toml) at
    `file`; None for a pyproject.toml without `[tool.redfirst]`. YamlError names file and line."""
    if name != PYPROJECT:
        return load_text(text, file)
    table, lines = _toml(text, file)
    return None if table is None else Document(file, table, lines, text)


def choose(read: Callable[[str], str | None], where: Callable[[str], Path]) -> Document | None:
    """The one configuration of a project whose files `read` gives (by name: a folder's, or a
    commit's; None where absent), `where` naming each file in messages: redfirst.yaml, else
    pyproject.toml's `[tool.redfirst]`, else None. A caller may rely on: both present is a
    YamlError naming both files (never one silently winning), whatever reads the configuration."""
    yaml_text, toml_text = read(YAML), read(PYPROJECT)
    toml = document(PYPROJECT, toml_text, where(PYPROJECT)) if toml_text is not None else None
    if yaml_text is not None and toml is not None:
        raise YamlError([Problem(where(PYPROJECT), toml.line_of(()) if () in toml.lines else 1,
                                 f"redfirst is configured twice: {where(YAML)} and [tool.redfirst] in "
                                 f"{where(PYPROJECT)}; keep one")])
    if yaml_text is not None:
        return document(YAML, yaml_text, where(YAML))
    return toml


def load(folder: Path) -> Document | None:
    """The configuration of the project at `folder` (`choose` over its two files)."""
    def read(name: str) -> str | None:
        return read_text(folder / name) if (folder / name).is_file() else None

    return choose(read, lambda name: folder / name)


def configures(folder: Path) -> bool:
    """Whether `folder` holds a project configuration (a project root), either file."""
    if (folder / YAML).is_file():
        return True
    pyproject = folder / PYPROJECT
    if not pyproject.is_file():
        return False
    try:
        text = read_text(pyproject)
    except YamlError:
        return False   # unreadable (not UTF-8, too large): no configuration of ours can be in it
    try:
        return _toml(text, pyproject)[0] is not None
    except YamlError:
        # Broken TOML: a root only where it means to configure redfirst (then `load` says where);
        # another tool's broken pyproject.toml (a vendored package) is no project root.
        return "tool.redfirst" in text

def key_name(doc: Document | None, key: str) -> str:
    """How messages name `key` of the configuration `doc` came from: `redfirst.yaml gates.paths`,
    or `pyproject.toml [tool.redfirst] gates.paths` (redfirst.yaml when there is no configuration)."""
    if doc is not None and doc.file.name.split("@")[0] == PYPROJECT:
        return f"{PYPROJECT} [tool.redfirst] {key}"
    return f"{YAML} {key}"


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def secret_names(doc: Document | None) -> tuple[str, ...]:
    """`secrets: names` of the configuration `doc`: variables whose values are secrets besides the
    secret-looking ones (`scrub.is_secret_name`). The one reader of that key: gates' records, checkers'
    outputs and leases' purposes and messages all scrub the names it returns. A caller may rely on: a `secrets`
    of any other shape (a string where the list goes, a list where the mapping goes, a name that is no variable
    name) is a YamlError at its line, never read as no names."""
    if doc is None or not isinstance(doc.data, dict) or "secrets" not in doc.data:
        return ()
    section = doc.data["secrets"]
    if section is None:
        return ()
    names = section.get("names", []) if isinstance(section, dict) else None
    if not isinstance(section, dict) or set(section) - {"names"} or not isinstance(names, list) \
            or not all(isinstance(n, str) and _NAME.match(n) for n in names):
        where = ("secrets", "names") if isinstance(section, dict) and "names" in section else ("secrets",)
        raise YamlError([Problem(doc.file, doc.line_of(where), f"{key_name(doc, 'secrets')}: must be "
                                 "{names: [VARIABLE_NAME, ...]}; no secret name of this file can be read")])
    return tuple(names)


def secret_names_at(folder: Path, say: Callable[[str], None]) -> tuple[str, ...]:
    """`secret_names` of the project at `folder`. Where its configuration cannot be read, () and `say` is told
    why at file:line: only the secret-looking names are scrubbed then, never silently."""
    return secret_names_in(lambda: load(folder), say)


def secret_names_in(doc: Callable[[], Document | None], say: Callable[[str], None]) -> tuple[str, ...]:
    """`secret_names` of the configuration `doc` gives (a folder's, a commit's): see `secret_names_at`."""
    try:
        return secret_names(doc())
    except (YamlError, OSError) as exc:
        problem = str(exc.problems[0]) if isinstance(exc, YamlError) else str(exc)
        say(f"{problem}; its secrets: names are not read, so only the secret-looking names are scrubbed")
        return ()
