"""docs/reference.md, generated from the shipped JSON Schemas (`python -m redfirst.gates.docgen >
docs/reference.md`; a test keeps the file equal to this output and every key documented)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

SCHEMAS = (
    ("Gate files", "gates schema", "redfirst.gates", "gate.schema.json"),
    ("Mutation files", "mutate check validates them", "redfirst.mutations", "mutation.schema.json"),
    ("Shard reports", "`mutate --shard K/N --json` prints one, `mutate merge` reads them", "redfirst.mutations",
     "shard-report.schema.json"),
    ("--json output", "gates schema --output", "redfirst.gates", "output.schema.json"),
)
_BRANCHES = ("oneOf", "anyOf", "allOf")


@dataclass(frozen=True)
class Key:
    """One key of a file, at its dotted path (`[]` an item of a list, `<name>` a key the user names)."""

    path: str
    kind: str
    required: bool
    default: str
    example: str
    meaning: str
    wrong_example: str = ""  # why the example is not a value the key accepts, "" when it is


def _deref(node: dict[str, Any], defs: dict[str, Any], seen: frozenset[str]) -> tuple[dict[str, Any], frozenset[str]]:
    ref = node.get("$ref", "")
    if not ref.startswith("#/$defs/"):
        return node, seen
    name = ref.rsplit("/", 1)[-1]
    if name in seen:
        return {k: v for k, v in node.items() if k != "$ref"}, seen
    return {**defs.get(name, {}), **{k: v for k, v in node.items() if k != "$ref"}}, seen | {name}


def _kind(node: dict[str, Any], defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> str:
    node, seen = _deref(node, defs, seen)
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind:
        return str(kind)
    for key in ("oneOf", "anyOf"):
        if key in node:
            kinds = [_kind(n, defs, seen) for n in node[key] if isinstance(n, dict)]
            return " or ".join(dict.fromkeys(k for k in kinds if k != "any")) or "any"
    return "any"


def _walk(node: dict[str, Any], defs: dict[str, Any], path: str, seen: frozenset[str]) -> Iterator[tuple[str, dict[str, Any], bool]]:
    node, seen = _deref(node, defs, seen)
    for branch in [*(b for key in _BRANCHES for b in node.get(key, [])), node.get("then"), node.get("else")]:
        if isinstance(branch, dict):
            yield from _walk(branch, defs, path, seen)
    required = set(node.get("required", []))
    for name, child in sorted(node.get("properties", {}).items()):
        if isinstance(child, dict):
            where = f"{path}.{name}" if path else name
            yield where, _deref(child, defs, seen)[0], name in required
            yield from _walk(child, defs, where, seen)
    items = node.get("items")
    if isinstance(items, dict):
        yield from _walk(items, defs, f"{path}[]", seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _walk(extra, defs, f"{path}.<name>", seen)


def keys(schema: dict[str, Any]) -> list[Key]:
    """Every key a document of `schema` may hold, walked through every `$ref`, `oneOf`/`anyOf`/`allOf`,
    `if`/`then`/`else`, list item and named-key map, once per path in the order first met (sorted per
    object; a file that is one document or a list of them lists each key once). A key met at several places (the branches of a `oneOf`) takes the first description and
    example given, and is required only where every place requires it. A caller may rely on this
    listing being the whole of what the schema accepts as keys: `undocumented` reads it."""
    defs = schema.get("$defs", {})
    found: dict[str, list[tuple[dict[str, Any], bool]]] = {}
    for path, node, required in _walk(schema, defs, "", frozenset()):
        found.setdefault(path, []).append((node, required))
    out = []
    for path, places in found.items():
        if path.startswith("[].") and path[3:] in found:
            continue  # a file of one document or a list of them: each key once
        nodes = [node for node, _ in places]
        required = all(req for _, req in places)
        described = next((n for n in nodes if n.get("description")), {})
        shown = next((n for n in nodes if n.get("examples")), {})
        example = shown.get("examples", [])
        default = next((n for n in nodes if "default" in n), None)
        kind = next((k for k in (_kind(n, defs) for n in nodes) if k != "any"), "any")
        out.append(Key(path, kind, required,
                       "required" if required else f"`{json.dumps(default['default'])}`" if default else "unset",
                       f"`{json.dumps(example[0])}`" if example else "",
                       " ".join(str(described.get("description", "")).split()),
                       _refused(example[0], shown, defs) if example else ""))
    return out


def _refused(example: Any, node: dict[str, Any], defs: dict[str, Any]) -> str:
    from jsonschema import Draft202012Validator

    errors = list(Draft202012Validator({**node, "$defs": defs}).iter_errors(example))
    return errors[0].message if errors else ""


def undocumented(schema: dict[str, Any]) -> list[str]:
    """The keys of `schema` that lack a description, an example (`examples`, one the key accepts) or a
    type: empty when every key reference.md lists says what it means, what it accepts, its default and
    an example that is right."""
    return [f"{k.path}: {what}" for k in keys(schema)
            for what, missing in (("no description", not k.meaning), ("no example", not k.example),
                                  ("no type", k.kind == "any"), (f"wrong example ({k.wrong_example})", k.wrong_example))
            if missing]


def _table(schema: dict[str, Any]) -> str:
    lines = ["| key | accepts | default | example | meaning |", "|---|---|---|---|---|"]
    for k in keys(schema):
        cells = (f"`{k.path}`", k.kind, k.default, k.example.replace("|", "\\|"), k.meaning.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def shipped() -> list[tuple[str, str, dict[str, Any]]]:
    """(title, where, schema) of every file and document reference.md describes."""
    from redfirst.config_schema import config_schema

    out = []
    for title, how, package, name in SCHEMAS:
        schema = json.loads(resources.files(package).joinpath(f"schema/{name}").read_text(encoding="utf-8"))
        out.append((title, f"`{package.replace('.', '/')}/schema/{name}` ({how}).", schema))
    config = config_schema()
    out.append(("redfirst.yaml", "`gates schema --config`; the same keys under `[tool.redfirst]` in pyproject.toml.",
                config))
    return out


def reference() -> str:
    out = ["# Configuration reference", "",
           "Generated from the JSON Schemas shipped in the package (`python -m redfirst.gates.docgen`); do not edit.",
           "The user guide is [guide.md](guide.md). A default of `unset` means the key is simply absent: its meaning",
           "says what that does; `<name>` is a key you name, `[]` an item of a list.", ""]
    for title, where, schema in shipped():
        out += [f"## {title}", "", f"{where} {schema.get('description', '')}".rstrip(), "", _table(schema), ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(reference())
