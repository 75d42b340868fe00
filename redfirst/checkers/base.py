"""The one interface every checker implements; a new checker is one module plus one registry line."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from redfirst.checkers.context import Context
from redfirst.checkers.model import CheckResult

# tree: judges the head tree alone; diff: compares base and head trees; commits: judges messages.
Needs = Literal["tree", "diff", "commits"]


class Checker(Protocol):
    name: str  # the key under `checkers:` in redfirst.yaml
    needs: str  # Needs: which input it judges, so a run knows whether it can be selected
    summary: str  # one line for `checkers list`
    schema: dict[str, Any]  # JSON Schema of its configuration value

    # one result per configured entry; never GREEN without something checked
    def check(self, config: Any, ctx: Context) -> list[CheckResult]: ...
