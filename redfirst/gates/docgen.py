"""docs/reference.md, generated from the shipped JSON Schemas (`python -m redfirst.gates.docgen >
docs/reference.md`; a test keeps the file equal to this output)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from importlib import resources
from typing import Any

SCHEMAS = (
    ("Gate files", "gates schema", "redfirst.gates", "gate.schema.json"),
    ("Mutation files", "mutate check validates them", "redfirst.mutations", "mutation.schema.json"),
    ("--json output", "gates schema --output", "redfirst.gates", "output.schema.json"),
)


def _kind(node: dict[str, Any]) -> str:
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
            return " or ".join(_kind(n) for n in node[key] if isinstance(n, dict))
    return "any" if "$ref" not in node else node["$ref"].rsplit("/", 1)[-1]


def _rows(node: dict[str, Any], defs: dict[str, Any], path: str, seen: frozenset[str]) -> Iterator[tuple[str, ...]]:
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/"):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            return
        node, seen = {**defs.get(name, {}), **{k: v for k, v in node.items() if k != "$ref"}}, seen | {name}
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in node.get(key, []):
            if isinstance(branch, dict) and (branch.get("properties") or branch.get("$ref")):
                yield from _rows(branch, defs, path, seen)
    required = set(node.get("required", []))
    for name, child in sorted(node.get("properties", {}).items()):
        if not isinstance(child, dict):
            continue
        where = f"{path}.{name}" if path else name
        default = f"`{json.dumps(child['default'])}`" if "default" in child else ""
        yield (f"`{where}`", _kind(child), "yes" if name in required else "", default,
               " ".join(str(child.get("description", "")).split()))
        yield from _rows(child, defs, where, seen)
    items = node.get("items")
    if isinstance(items, dict):
        yield from _rows(items, defs, f"{path}[]", seen)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and (extra.get("properties") or extra.get("$ref")):
        yield from _rows(extra, defs, f"{path}.<name>", seen)


def _table(schema: dict[str, Any]) -> str:
    rows = list(dict.fromkeys(_rows(schema, schema.get("$defs", {}), "", frozenset())))
    lines = ["| key | accepts | required | default | meaning |", "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") if i != 1 else cell for i, cell in enumerate(row)) + " |"
              for row in rows]
    return "\n".join(lines)


def reference() -> str:
    from redfirst.config_schema import config_schema

    out = ["# Configuration reference", "",
           "Generated from the JSON Schemas shipped in the package (`python -m redfirst.gates.docgen`); do not edit.",
           "The user guide is [guide.md](guide.md).", ""]
    for title, how, package, name in SCHEMAS:
        schema = json.loads(resources.files(package).joinpath(f"schema/{name}").read_text(encoding="utf-8"))
        out += [f"## {title}", "", f"`{package.replace('.', '/')}/schema/{name}` ({how}). {schema.get('description', '')}".rstrip(),
                "", _table(schema), ""]
    config = config_schema()
    out += ["## redfirst.yaml", "", f"`gates schema --config`. {config['description']}", "", _table(config), ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(reference())
