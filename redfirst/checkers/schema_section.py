"""The `checkers:` section of redfirst.yaml's schema, from each registered checker's own schema and
the presets (`redfirst.config_schema` asks for it by name)."""

from __future__ import annotations

from typing import Any

from redfirst.checkers.presets import PRESETS
from redfirst.checkers.registry import REGISTRY


def section() -> dict[str, Any]:
    checkers: dict[str, Any] = {
        "preset": {"description": "a preset (or a list) that configures a set of checkers", "examples": ["agents-record"],
                   "oneOf": [{"enum": sorted(PRESETS)}, {"type": "array", "items": {"enum": sorted(PRESETS)}}]},
    }
    for name, checker in REGISTRY.items():
        doc = (checker.__doc__ or "").strip().splitlines()
        checkers[name] = {"description": doc[0] if doc else name, "examples": checker.schema.get("examples", []),
                          "anyOf": [checker.schema, {"const": False, "description": "switch off (a preset's)"}]}
    return checkers
