"""One cuda-graph arm's observation: what the child saw for one (variant, shape), kept raw.

Plain data with no CUDA import: the child writes it into evidence.jsonl, and the driver
reads it back to grade (also `gates regrade` on a machine without a GPU). The aggregate
fields (`replays_completed`, `replays_passed`, `eager_passed`) are kept for people; the
grader recomputes them from the raw comparisons and never trusts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KIND = "cuda-graph"
FAILURE_CLASSES = ("eager", "capture", "replay")


@dataclass(frozen=True)
class Compared:
    """One output compared bit for bit: eager run r against eager run 0, or replay k against
    an eager run on the same inputs. `raw` is gates.cuda.comparator.RawComparison's record."""

    phase: str                 # "eager" | "replay"
    index: int                 # eager run number (>= 1) or replay number (0: as captured)
    fresh: bool                # inputs differ from those the graph was captured with
    output: str
    raw: dict[str, Any]

    def as_record(self) -> dict[str, Any]:
        return {"phase": self.phase, "index": self.index, "fresh": self.fresh, "output": self.output, **self.raw}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Compared:
        raw = {k: v for k, v in data.items() if k not in ("phase", "index", "fresh", "output")}
        return cls(str(data["phase"]), int(data["index"]), bool(data["fresh"]), str(data["output"]), raw)

    @property
    def values(self) -> int:
        return int(self.raw.get("values") or 0)

    @property
    def differing(self) -> int:
        return int(self.raw.get("differing") or 0)

    @property
    def holds(self) -> bool:
        return self.values > 0 and self.differing == 0 and not self.raw.get("mismatch")


@dataclass(frozen=True)
class Observation:
    variant: str
    shape: tuple[int, ...]
    applicable: bool
    eager_passed: bool
    graph_required: bool
    replays_completed: int
    replays_passed: int
    failure_class: str | None          # None | "eager" | "capture" | "replay"
    failure: str | None = None         # what went wrong, one line
    applicable_at_capture: bool | None = None
    graph_nodes: int | None = None
    comparisons: tuple[Compared, ...] = ()
    device: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        """Keyword arguments of `gates.evidence.observation(KIND, ...)`."""
        return {
            "variant": self.variant, "shape": list(self.shape), "applicable": self.applicable,
            "eager_passed": self.eager_passed, "graph_required": self.graph_required,
            "replays_completed": self.replays_completed, "replays_passed": self.replays_passed,
            "failure_class": self.failure_class, "failure": self.failure,
            "applicable_at_capture": self.applicable_at_capture, "graph_nodes": self.graph_nodes,
            "comparisons": [c.as_record() for c in self.comparisons], "device": self.device,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Observation:
        """From an evidence record; KeyError/TypeError/ValueError when it is malformed."""
        failure_class = data["failure_class"]
        if failure_class is not None and failure_class not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure_class {failure_class!r}")
        for key in ("applicable", "eager_passed", "graph_required"):
            if not isinstance(data[key], bool):
                raise TypeError(f"{key} must be true or false")
        return cls(
            variant=str(data["variant"]),
            shape=tuple(int(s) for s in data["shape"]),
            applicable=data["applicable"],
            eager_passed=data["eager_passed"],
            graph_required=data["graph_required"],
            replays_completed=int(data["replays_completed"]),
            replays_passed=int(data["replays_passed"]),
            failure_class=failure_class,
            failure=data.get("failure"),
            applicable_at_capture=data.get("applicable_at_capture"),
            graph_nodes=data.get("graph_nodes"),
            comparisons=tuple(Compared.from_record(c) for c in data.get("comparisons") or ()),
            device=dict(data.get("device") or {}),
        )

    @property
    def label(self) -> str:
        return f"{self.variant} {list(self.shape)}"
