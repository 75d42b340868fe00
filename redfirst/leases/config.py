"""The `leases:` section of `redfirst.yaml`: which backend, where its state lives, declared boxes.

```yaml
leases:
  backend: local            # local | slurm | rc
  db: ~/state/leases.db     # local: the lease file (default $XDG_STATE_HOME/redfirst/leases.db)
  ttl: 30                   # seconds a holder may go without a heartbeat
  boxes:                    # local: labels added to `local`, and extra boxes it schedules
    local: {labels: {checkpoint: llama-8b}}
    thor: {gpus: 2, labels: {gpu_model: h200, sm: "9.0"}}
  slurm: {rest: "http://127.0.0.1:6820", user: root, partition: gpu, token_env: SLURM_JWT}
  rc: {url: "http://rc.example:8080", token_env: RC_TOKEN, submitter: ci}
```
`REDFIRST_LEASES_DB` overrides `db` (tests give each run its own file).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from redfirst import yamlsrc
from redfirst.leases.model import LeaseError

BACKEND_NAMES = ("local", "slurm", "rc")
_MAX_SECONDS = 10**9  # about 31 years: beyond it a time is no timeout but a typo
# GPUs of one declared box: more than any machine holds (a box's slots are named one by one, so a
# count of 10**12 was a list that never finished building).
MAX_GPUS = 4096
_BOX_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ConfigError(LeaseError):
    """A wrong `leases:` section; the message starts with file:line."""


@dataclass(frozen=True)
class DeclaredBox:
    name: str
    gpus: int | None = None                       # None: detect (the `local` box) or 0
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LeasesConfig:
    backend: str = "local"
    db: Path | None = None
    ttl: float = 30.0
    boxes: tuple[DeclaredBox, ...] = ()
    slurm: tuple[tuple[str, str], ...] = ()
    rc: tuple[tuple[str, str], ...] = ()
    source: str = "<defaults>"
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    secret_names: tuple[str, ...] = ()     # `secrets: names` of the same configuration (projectconfig.secret_names)

    def db_path(self) -> Path:
        # Absolute: the wrapper of a leased command (`redfirst.leases.exec`) gets this path but runs in the command's cwd.
        env = os.environ.get("REDFIRST_LEASES_DB")
        if env:
            return Path(os.path.abspath(env))
        if self.db is not None:
            return Path(os.path.abspath(self.db))
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(os.path.abspath(Path(state) / "redfirst" / "leases.db"))

    def declared(self, name: str) -> DeclaredBox | None:
        return next((b for b in self.boxes if b.name == name), None)


def _line(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1


def _child(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _label_texts(labels: dict[Any, Any], boxes_node: yaml.Node | None,
                 name: str) -> tuple[tuple[str, str], ...]:
    """Label values as written: YAML would read `cuda: 12.10` as 12.1 and `fast: yes` as True."""
    written: dict[str, str] = {}
    box_node = _child(boxes_node, name) if isinstance(boxes_node, yaml.MappingNode) else None
    lnode = _child(box_node, "labels") if isinstance(box_node, yaml.MappingNode) else None
    if isinstance(lnode, yaml.MappingNode):
        for k, v in lnode.value:
            if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                written[k.value] = v.value
    return tuple((str(k).lower(), written.get(str(k), "" if v is None else str(v))) for k, v in labels.items())


def load(root: Path | None) -> LeasesConfig:
    """The config of the repository at `root` (defaults when it has no `redfirst.yaml` or
    `[tool.redfirst]`, or no `leases:`)."""
    if root is None:
        return LeasesConfig()
    from redfirst import projectconfig

    try:
        loaded = projectconfig.load(root)  # the one reader: bounds, duplicate keys, UTF-8, file:line
        names = projectconfig.secret_names(loaded)     # a `secrets` it cannot read is refused, never no names
    except yamlsrc.YamlError as exc:
        raise ConfigError(str(exc.problems[0])) from None
    if loaded is None:
        return LeasesConfig()
    path, data, doc = loaded.file, loaded.data, loaded.root
    if not isinstance(data, dict) or "leases" not in data or data["leases"] is None:
        return LeasesConfig(source=str(path), secret_names=names)
    lnode = _child(doc, "leases") if isinstance(doc, yaml.MappingNode) else None
    return dataclasses.replace(from_mapping(data["leases"], path, lnode), secret_names=names)


def from_mapping(raw: Any, path: Path, node: yaml.Node | None = None) -> LeasesConfig:
    def fail(key: str | None, message: str) -> ConfigError:
        sub = _child(node, key) if key and isinstance(node, yaml.MappingNode) else node
        return ConfigError(f"{path}:{_line(sub)}: leases{'.' + key if key else ''}: {message}")

    if not isinstance(raw, dict):
        raise fail(None, "must be a mapping")
    known = {"backend", "db", "ttl", "boxes", "slurm", "rc"}
    for key in raw:
        if key not in known:
            raise fail(str(key), f"unknown key (known: {', '.join(sorted(known))})")
    backend = raw.get("backend", "local")
    if backend not in BACKEND_NAMES:
        raise fail("backend", f"{backend!r} is not one of {', '.join(BACKEND_NAMES)}")
    ttl = raw.get("ttl", 30.0)
    # A chained comparison: also false for NaN, and safe for an int too large for a float.
    if not isinstance(ttl, int | float) or isinstance(ttl, bool) or not 0 < ttl <= _MAX_SECONDS:
        raise fail("ttl", f"must be a number of seconds > 0 and at most {_MAX_SECONDS}")
    db = raw.get("db")
    if db is not None and not isinstance(db, str):
        raise fail("db", "must be a path")
    boxes = []
    raw_boxes = raw.get("boxes") or {}
    if not isinstance(raw_boxes, dict):
        raise fail("boxes", "must map box names to {gpus, labels}")
    bnode = _child(node, "boxes") if isinstance(node, yaml.MappingNode) else None
    for name, spec in raw_boxes.items():
        spec = spec or {}
        if not isinstance(name, str) or not _BOX_NAME.fullmatch(name):
            # The name becomes a lock file name and a lease id: no slashes, no spaces.
            raise fail("boxes", f"box name {name!r} must be letters, digits, '.', '_' or '-'")
        if not isinstance(spec, dict) or set(spec) - {"gpus", "labels"}:
            raise fail("boxes", f"box {name!r}: only `gpus` and `labels` may be declared")
        gpus = spec.get("gpus")
        if gpus is not None and (not isinstance(gpus, int) or isinstance(gpus, bool) or not 0 <= gpus <= MAX_GPUS):
            raise fail("boxes", f"box {name!r}: gpus must be an integer >= 0 and at most {MAX_GPUS}")
        labels = spec.get("labels") or {}
        if not isinstance(labels, dict):
            raise fail("boxes", f"box {name!r}: labels must be a mapping")
        for k, v in labels.items():
            if isinstance(v, dict | list):
                raise fail("boxes", f"box {name!r}: labels.{k} must be a single value, not {type(v).__name__}")
        boxes.append(DeclaredBox(name, gpus, _label_texts(labels, bnode, name)))
    sections = {}
    for key in ("slurm", "rc"):
        sec = raw.get(key) or {}
        if not isinstance(sec, dict):
            raise fail(key, "must be a mapping")
        sections[key] = tuple((str(k), str(v)) for k, v in sec.items())
    return LeasesConfig(
        backend=backend,
        db=(path.parent / os.path.expanduser(db)) if db else None,
        ttl=float(ttl),
        boxes=tuple(boxes),
        slurm=sections["slurm"],
        rc=sections["rc"],
        source=str(path),
    )
