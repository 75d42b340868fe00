"""Secret values never reach the evidence store.

A secret is the value of a variable whose name looks secret (TOKEN, SECRET, PASSW, KEY, JWT,
CREDENTIAL, AUTH), in the run's environment or among the gate's own `env:` declarations. Before
a run is sealed every occurrence is replaced in every raw file (stdout, stderr, build and
enumeration output, JUnit XML, evidence, copied inputs) and in the record's own text (the gate
document, argv, context). The record id is the hash of what is stored, and the verdict is graded
from the sealed, scrubbed folder at run time exactly as `gates regrade` grades it later, so the
two agree.

Values shorter than MIN_LENGTH characters are not scrubbed: replacing a 1-3 character value
everywhere would blank every digit or common word of the output (and change verdicts), while
hiding almost nothing. Text files get `REDACTED`; a binary file (not UTF-8) gets the same number
of `*` bytes, so its length and offsets (a tensor's shape) stay as they were.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSW|KEY|JWT|CREDENTIAL|AUTH)", re.IGNORECASE)
MIN_LENGTH = 6
# A bare word: it stays well-formed wherever a secret was (XML text, a JSON string, a YAML plain
# scalar, shell text); `<redacted>` would break the JUnit XML it replaces a secret in.
REDACTED = "REDACTED"
# Larger raw files are left as they are: reading them whole to scrub would cost their size in memory.
_MAX_SCAN_BYTES = 512 * 1024 * 1024


def secret_values(env: Mapping[str, str], declared: Iterable[tuple[str, str]] = ()) -> tuple[str, ...]:
    """The values to scrub, longest first (a secret that contains another is replaced whole)."""
    found = {value for name, value in [*env.items(), *declared]
             if SECRET_NAME.search(name) and len(value) >= MIN_LENGTH and value.strip()}
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def scrub_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        for secret in secrets:
            raw = secret.encode("utf-8", errors="surrogateescape")
            data = data.replace(raw, b"*" * len(raw))
        return data
    return scrub_text(text, secrets).encode("utf-8")


def scrub_folder(folder: Path, secrets: tuple[str, ...]) -> list[str]:
    """Scrub every regular file under `folder` in place; the relative paths that changed."""
    if not secrets:
        return []
    changed = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_SCAN_BYTES:
                continue
            data = path.read_bytes()
            clean = scrub_bytes(data, secrets)
            if clean != data:
                path.write_bytes(clean)
                changed.append(path.relative_to(folder).as_posix())
    return sorted(changed)


def scrub_json(value: Any, secrets: tuple[str, ...]) -> Any:
    """A JSON-able value with every string (keys too) scrubbed."""
    if not secrets:
        return value
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, list):
        return [scrub_json(v, secrets) for v in value]
    if isinstance(value, dict):
        return {scrub_json(k, secrets): scrub_json(v, secrets) for k, v in value.items()}
    return value

