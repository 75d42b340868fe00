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
PHASES = ("eager", "replay", "recapture")
CAPTURE_MODES = ("stream", "torch")
DEFAULTS = {"warmup": 2, "replays": 4, "repeat_eager": 2}   # a gate's plan where it declares none


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_raw(where: str, raw: dict[str, Any]) -> None:
    """A comparator's raw result, as redfirst.gates.cuda.comparator.RawComparison writes it, and coherent:
    counts are integers, the first index exists exactly when something differs, and equal counts
    of 0 come with equal buffer hashes (both comparators always hash both buffers)."""
    values, differing, first = raw["values"], raw["differing"], raw.get("first_index")
    if not _is_int(values) or not _is_int(differing) or not 0 <= differing <= values:
        raise ValueError(f"{where}: values {values!r} / differing {differing!r} are not counts with "
                         "0 <= differing <= values")
    if raw.get("mismatch"):
        return
    if (first is None) != (differing == 0) or (first is not None and not (_is_int(first) and 0 <= first < values)):
        raise ValueError(f"{where}: first_index {first!r} does not agree with {differing} differing of {values}")
    ref, cand = raw["reference_hash64"], raw["candidate_hash64"]
    if not isinstance(ref, str) or not isinstance(cand, str):
        raise TypeError(f"{where}: reference_hash64 and candidate_hash64 must be strings")
    if (ref == cand) != (differing == 0):
        raise ValueError(f"{where}: {differing} differing but the buffer hashes are "
                         f"{'equal' if ref == cand else 'different'} ({ref}, {cand})")
    sha_ref, sha_cand = raw.get("reference_sha256"), raw.get("candidate_sha256")
    if sha_ref is not None and sha_cand is not None and (sha_ref == sha_cand) != (differing == 0):
        raise ValueError(f"{where}: {differing} differing but the buffer sha256 are "
                         f"{'equal' if sha_ref == sha_cand else 'different'}")


@dataclass(frozen=True)
class Compared:
    """One output compared bit for bit: eager run r against eager run 0, or replay k against
    an eager run on the same inputs. `raw` is redfirst.gates.cuda.comparator.RawComparison's record."""

    phase: str                 # "eager" | "replay" | "recapture" (replay k's output against a capture
    #                            made on replay k's inputs, replayed once: redfirst.gates.cuda.arm)
    index: int                 # eager run number (>= 1) or replay number (0: as captured)
    fresh: bool                # inputs differ from those the graph was captured with
    output: str
    raw: dict[str, Any]

    def as_record(self) -> dict[str, Any]:
        return {"phase": self.phase, "index": self.index, "fresh": self.fresh, "output": self.output, **self.raw}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Compared:
        """Strictly typed and self-consistent, else ValueError/TypeError/KeyError: a count that is
        absent, fractional or contradicted by the hashes must never read as 0 differing."""
        phase, index, fresh, output = data["phase"], data["index"], data["fresh"], data["output"]
        if phase not in PHASES:
            raise ValueError(f"comparison phase {phase!r} is not one of {', '.join(PHASES)}")
        if not _is_int(index) or index < 0 or not isinstance(fresh, bool):
            raise TypeError(f"comparison index {index!r} / fresh {fresh!r}: need an integer >= 0 and true/false")
        if not isinstance(output, str) or not output:
            raise TypeError(f"comparison output {output!r} must be a non-empty string")
        raw = {k: v for k, v in data.items() if k not in ("phase", "index", "fresh", "output")}
        _check_raw(f"{phase} {index} output {output}", raw)
        return cls(phase, index, fresh, output, raw)

    @property
    def values(self) -> int:
        return int(self.raw.get("values") or 0)

    @property
    def differing(self) -> int:
        return int(self.raw.get("differing") or 0)

    @property
    def holds(self) -> bool:
        return self.values > 0 and self.differing == 0 and not self.raw.get("mismatch")


def replay_tally(comparisons: list[Compared]) -> tuple[int, int]:
    """(fresh replays completed, those whose every output held): an arm's replay counts, read
    from its comparisons only, the one place both the device and the simulated arms count them."""
    fresh = [c for c in comparisons if c.phase == "replay" and c.fresh]
    done = sorted({c.index for c in fresh})
    return len(done), len([k for k in done if all(c.holds for c in fresh if c.index == k)])


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
    capture: str = "stream"            # "stream" (the driver's raw stream) | "torch" (torch.cuda.CUDAGraph)
    hazard: str | None = None          # the graph hazard injected (mutate hazards), None for the code as is
    frameworks: dict[str, str] = field(default_factory=dict)   # torch/cupy/triton versions the child imported
    rank: int | None = None            # rank groups (`ranks:`): this rank, the group's size and tp size
    world_size: int | None = None
    tp_size: int | None = None
    collectives: dict[str, list[dict[str, Any]]] | None = None  # "eager"/"capture": [{op, size, dtype}, ...]

    def fields(self) -> dict[str, Any]:
        """Keyword arguments of `redfirst.gates.evidence.observation(KIND, ...)`."""
        return {
            "variant": self.variant, "shape": list(self.shape), "applicable": self.applicable,
            "eager_passed": self.eager_passed, "graph_required": self.graph_required,
            "replays_completed": self.replays_completed, "replays_passed": self.replays_passed,
            "failure_class": self.failure_class, "failure": self.failure,
            "applicable_at_capture": self.applicable_at_capture, "graph_nodes": self.graph_nodes,
            "comparisons": [c.as_record() for c in self.comparisons], "device": self.device,
            "capture": self.capture, "hazard": self.hazard, "frameworks": self.frameworks,
            **({} if self.rank is None else {"rank": self.rank, "world_size": self.world_size,
                                             "tp_size": self.tp_size, "collectives": self.collectives})}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Observation:
        """From an evidence record; KeyError/TypeError/ValueError when it is malformed. A caller may
        rely on each (phase, index, output) being compared at most once: the child never compares
        one twice, and two records of one comparison would let the grader believe either."""
        failure_class = data["failure_class"]
        if failure_class is not None and failure_class not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure_class {failure_class!r}")
        for key in ("applicable", "eager_passed", "graph_required"):
            if not isinstance(data[key], bool):
                raise TypeError(f"{key} must be true or false")
        at_capture = data.get("applicable_at_capture")
        if at_capture is not None and not isinstance(at_capture, bool):
            raise TypeError("applicable_at_capture must be true, false or null")
        variant, shape = data["variant"], data["shape"]
        if not isinstance(variant, str) or not isinstance(shape, list) or not all(_is_int(s) for s in shape):
            raise TypeError(f"variant {variant!r} / shape {shape!r}: need a string and a list of integers")
        for key in ("replays_completed", "replays_passed"):
            if not _is_int(data[key]):
                raise TypeError(f"{key} must be an integer")
        comparisons, device, failure = data.get("comparisons") or [], data.get("device") or {}, data.get("failure")
        if not isinstance(comparisons, list) or not isinstance(device, dict):
            raise TypeError("comparisons must be a list and device an object")
        if failure is not None and not isinstance(failure, str):
            raise TypeError("failure must be a string or null")
        mode, hazard, frameworks = data.get("capture", "stream"), data.get("hazard"), data.get("frameworks") or {}
        if mode not in CAPTURE_MODES or (hazard is not None and not isinstance(hazard, str)):
            raise ValueError(f"capture {mode!r} / hazard {hazard!r}: need one of {', '.join(CAPTURE_MODES)} and a "
                             "string or null")
        if not isinstance(frameworks, dict):
            raise TypeError("frameworks must be an object")
        bound = {k: data.get(k) for k in ("rank", "world_size", "tp_size")}
        if any(v is not None and not _is_int(v) for v in bound.values()):
            raise TypeError(f"rank / world_size / tp_size {bound} must be integers or null")
        collectives = data.get("collectives")
        if collectives is not None and not (isinstance(collectives, dict) and all(
                isinstance(v, list) and all(isinstance(e, dict) for e in v) for v in collectives.values())):
            raise TypeError("collectives must map a phase to a list of {op, size, dtype} objects")
        compared = tuple(Compared.from_record(c) for c in comparisons)
        keys = [(c.phase, c.index, c.output) for c in compared]
        twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
        if twice is not None:
            raise ValueError(f"{twice[0]} {twice[1]} output {twice[2]} compared twice")
        return cls(
            variant=variant,
            shape=tuple(shape),
            applicable=data["applicable"],
            eager_passed=data["eager_passed"],
            graph_required=data["graph_required"],
            replays_completed=data["replays_completed"],
            replays_passed=data["replays_passed"],
            failure_class=failure_class,
            failure=failure,
            applicable_at_capture=at_capture,
            graph_nodes=data.get("graph_nodes"),
            comparisons=compared,
            device=dict(device),
            capture=mode,
            hazard=hazard,
            frameworks={str(k): str(v) for k, v in frameworks.items()},
            collectives=collectives,
            **bound,
        )

    @property
    def label(self) -> str:
        return f"{self.variant} {list(self.shape)}"
