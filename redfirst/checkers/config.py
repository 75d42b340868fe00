"""The checker policy: the `checkers:` section of redfirst.yaml (plus an optional preset), validated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst.checkers import yamlines
from redfirst.checkers.base import Checker
from redfirst.checkers.tree import NotAFile, Tree
from redfirst.yamlsrc import YamlError

CONFIG_FILE = "redfirst.yaml"
FOREIGN = "policy not from the merge base"


class ConfigError(Exception):
    """Bad policy; each problem reads `file:line: message`."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Policy:
    source: str  # e.g. "redfirst.yaml@1a2b3c4d5e6f"
    entries: tuple[tuple[str, Any], ...]  # (checker name, its validated configuration)
    preset_only: frozenset[str] = frozenset()  # checkers on only because a preset names them
    foreign: bool = False  # read from --config or the head, not the merge base: labelled in every output

    @property
    def note(self) -> str:
        return f"{FOREIGN}: {self.source}" if self.foreign else ""


def load_policy(tree: Tree, registry: dict[str, Checker], presets: dict[str, dict[str, Any]]) -> Policy | None:
    """The policy held by `tree` (its redfirst.yaml, or pyproject.toml's `[tool.redfirst]`: both is an
    error naming both), or None when it has no `checkers:` section."""
    from redfirst import projectconfig

    def read(name: str) -> str | None:
        try:
            return tree.read(name)
        except NotAFile as exc:
            raise ConfigError([f"{name}@{tree.label}:1: {exc.message}"]) from exc

    try:
        doc = projectconfig.choose(read, lambda name: Path(f"{name}@{tree.label}"))
    except YamlError as exc:
        raise ConfigError([str(p) for p in exc.problems]) from None
    if doc is None:
        return None
    return parse_policy(doc.text, str(doc.file), registry, presets)


def parse_policy(text: str, where: str, registry: dict[str, Checker], presets: dict[str, dict[str, Any]],
                 foreign: bool = False) -> Policy | None:
    """The policy in `text` (a redfirst.yaml, or a pyproject.toml's `[tool.redfirst]`), or None when it has no `checkers:` section; `where`
    names it in every message."""
    from redfirst import projectconfig

    if where.split("@")[0].endswith(projectconfig.PYPROJECT):   # its [tool.redfirst] table
        try:
            doc = projectconfig.document(projectconfig.PYPROJECT, text, Path(where))
        except YamlError as exc:
            raise ConfigError([str(p) for p in exc.problems]) from None
        data, lines = (doc.data, doc.lines) if doc is not None else (None, {})
    else:
        try:
            data, lines = yamlines.load(text)
        except yamlines.YamlError as exc:
            raise ConfigError([f"{where}:{exc.line}: {exc.message}"]) from exc
    if not isinstance(data, dict) or data.get("checkers") is None:
        return None
    section = data["checkers"]
    if not isinstance(section, dict):
        raise ConfigError([f"{where}:{yamlines.line_of(lines, ('checkers',))}: `checkers:` must be a mapping "
                           f"of checker name to its configuration"])
    problems: list[str] = []
    merged: dict[str, Any] = {}
    from_preset: set[str] = set()
    for preset_name in _preset_names(section.get("preset"), where, lines, problems):
        if preset_name not in presets:
            problems.append(f"{where}:{yamlines.line_of(lines, ('checkers', 'preset'))}: unknown preset "
                            f"{preset_name!r} (known: {', '.join(sorted(presets))})")
            continue
        merged.update(presets[preset_name])
        from_preset.update(presets[preset_name])
    for name, value in section.items():
        if name == "preset":
            continue
        line = yamlines.line_of(lines, ("checkers", name))
        if name not in registry:
            problems.append(f"{where}:{line}: unknown checker {name!r} (known: {', '.join(sorted(registry))})")
            continue
        if value is False:  # `name: false` switches off a checker a preset turned on
            merged.pop(name, None)
            continue
        import jsonschema  # on first use: a policy of presets alone (validated by its tests) never pays for it

        for err in jsonschema.Draft202012Validator(
                registry[name].schema, format_checker=jsonschema.FormatChecker()).iter_errors(value):
            path = ("checkers", name, *err.absolute_path)
            at = "/".join(str(p) for p in err.absolute_path) or name
            problems.append(f"{where}:{yamlines.line_of(lines, path)}: checkers.{name}: {at}: {err.message}")
        merged[name] = value
        from_preset.discard(name)
    if problems:
        raise ConfigError(problems)
    return Policy(where, tuple((name, merged[name]) for name in registry if name in merged),
                  frozenset(from_preset & set(merged)), foreign)


def _preset_names(value: Any, where: str, lines: dict[tuple[Any, ...], int], problems: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    problems.append(f"{where}:{yamlines.line_of(lines, ('checkers', 'preset'))}: `preset` must be a name "
                    f"or a list of names")
    return []
