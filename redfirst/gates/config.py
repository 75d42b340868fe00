"""The project: its root, its `redfirst.yaml` (or pyproject.toml's `[tool.redfirst]`), where gate
files and state live.

The root is the folder holding `redfirst.yaml` or a `[tool.redfirst]` table (found from the working directory
upwards, not past the git top-level), or `--root DIR`, or else the git top-level.
Paths in gate files are relative to it.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst import projectconfig
from redfirst.yamlsrc import Document, Problem, YamlError

CONFIG_NAME = "redfirst.yaml"
PARTS = ("gates", "mutations", "leases", "checkers", "evidence", "secrets")


@dataclass(frozen=True)
class Project:
    root: Path
    config: Document | None

    def section(self, name: str) -> dict[str, Any]:
        data = self.config.data if self.config else None
        value = data.get(name) if isinstance(data, dict) else None
        return value if isinstance(value, dict) else {}

    def config_sections(self) -> tuple[str, ...]:
        """The parts redfirst.yaml configures (its top-level keys); () without a redfirst.yaml."""
        data = self.config.data if self.config else None
        return tuple(k for k in data if isinstance(k, str)) if isinstance(data, dict) else ()

    @property
    def gate_paths(self) -> tuple[Path, ...]:
        paths = self.section("gates").get("paths", ["gates"])
        return tuple(self.root / p for p in paths)

    @property
    def mutation_paths(self) -> tuple[Path, ...]:
        """Where the mutation files are (`mutations: paths:`): declarations mutate reads, never a gate."""
        paths = self.section("mutations").get("paths", ["mutations"])
        return tuple(self.root / p for p in paths)

    @property
    def state_dir(self) -> Path:
        return self.root / ".redfirst"

    @property
    def evidence_cap_bytes(self) -> int:
        mib = self.section("evidence").get("max_mib", 512)
        return int(float(mib) * 1024 * 1024)

    @property
    def secret_names(self) -> tuple[str, ...]:
        """`secrets: names`: variables whose values are scrubbed besides the secret-looking ones."""
        return projectconfig.secret_names(self.config)

    def relative(self, path: Path) -> str:
        try:
            return str(path.resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def cache_home() -> Path:
    """redfirst's cache folder for this user, outside every tree: `$XDG_CACHE_HOME/redfirst`
    (`~/.cache/redfirst` where that is unset)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "redfirst"


def git_toplevel(start: Path) -> Path | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=start, capture_output=True,
                             text=True, check=False)
    except OSError:
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def find_root(start: Path) -> Path:
    start = start.resolve()
    top = git_toplevel(start)
    for folder in (start, *start.parents):
        if projectconfig.configures(folder):   # redfirst.yaml, or pyproject.toml's [tool.redfirst]
            return folder
        if top is not None and folder == top:
            break
    return top or start


def _check_config(doc: Document) -> list[Problem]:
    problems: list[Problem] = []
    if doc.data is None:
        return problems
    if not isinstance(doc.data, dict):
        return [Problem(doc.file, 1, "redfirst.yaml must be a mapping of parts (gates, mutations, leases, checkers)")]
    for key in doc.data:
        if key not in PARTS:
            problems.append(Problem(doc.file, doc.line_of((key,)),
                                    f"unknown key {key!r} (allowed: {', '.join(PARTS)})"))
    for part in ("gates", "mutations"):
        problems += _check_paths_section(doc, part)
    evidence = doc.data.get("evidence")
    if evidence is not None:
        if not isinstance(evidence, dict) or set(evidence) - {"max_mib"}:
            problems.append(Problem(doc.file, doc.line_of(("evidence",)),
                                    "evidence: a mapping with only `max_mib` (the store's size cap in MiB)"))
        else:
            cap = evidence.get("max_mib", 512)
            # A chained comparison: false for NaN and infinity, exact for an int too large for a float.
            if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 < cap <= 2**40:
                problems.append(Problem(doc.file, doc.line_of(("evidence", "max_mib")),
                                        f"evidence.max_mib: {cap!r} is not a positive number of MiB"))
    return problems + _check_secrets(doc)


def _check_secrets(doc: Document) -> list[Problem]:
    """`secrets:` holds only `names`, a list of environment variable names."""
    section = doc.data.get("secrets")
    if section is None:
        return []
    if not isinstance(section, dict) or set(section) - {"names"}:
        return [Problem(doc.file, doc.line_of(("secrets",)),
                        "secrets: a mapping with only `names` (variables whose values are scrubbed)")]
    names = section.get("names", [])
    if not isinstance(names, list):
        return [Problem(doc.file, doc.line_of(("secrets", "names")), "secrets.names: must be a list of variable names")]
    return [Problem(doc.file, doc.line_of(("secrets", "names", i)),
                    f"secrets.names[{i}]: {n!r} is not a variable name (letters, digits, _)")
            for i, n in enumerate(names) if not (isinstance(n, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n))]


def _check_paths_section(doc: Document, part: str) -> list[Problem]:
    """`gates:` and `mutations:` hold only `paths`, a list of folders (strings) under the root."""
    section = doc.data.get(part)
    if section is None:
        return []
    if not isinstance(section, dict):
        return [Problem(doc.file, doc.line_of((part,)), f"{part}: must be a mapping")]
    problems = [Problem(doc.file, doc.line_of((part, key)), f"unknown key {key!r} in {part} (allowed: paths)")
                for key in section if key != "paths"]
    paths = section.get("paths", [])
    if not isinstance(paths, list):
        problems.append(Problem(doc.file, doc.line_of((part, "paths")),
                                f"{part}.paths: must be a list of folders relative to the root"))
        return problems
    for i, p in enumerate(paths):
        if not (isinstance(p, str) and p.strip()) or "\0" in p:
            problems.append(Problem(doc.file, doc.line_of((part, "paths", i)),
                                    f"{part}.paths[{i}]: {p!r} is not a folder (a non-empty string) relative "
                                    "to the root"))
    return problems


def load_project(root: Path | None = None, cwd: Path | None = None) -> Project:
    """The project at `root` (or discovered from `cwd`); YamlError for a bad redfirst.yaml."""
    folder = Path(root).resolve() if root else find_root(cwd or Path(os.getcwd()))
    if not folder.is_dir():
        raise YamlError([Problem(folder, 0, "root folder does not exist")])
    doc = projectconfig.load(folder)
    if doc is not None:
        problems = _check_config(doc)
        if problems:
            raise YamlError(problems)
    return Project(folder, doc)
