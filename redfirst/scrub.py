"""Secret values never reach the evidence store, in any form they are commonly written in.

A secret is the value of a variable whose name looks secret (`is_secret_name`: TOKEN, SECRET,
PASSW, KEY, JWT, CREDENTIAL, AUTH or PRIVATE anywhere in it, or ending in PASS; or one of the
extra names `secrets: {names: [...]}` of redfirst.yaml lists), in the run's environment or among
the gate's own `env:` declarations. Before a run is sealed every form of it (`forms`: raw, JSON,
XML/HTML escapes, Python repr, percent-encoding, base64) is replaced in every raw file (stdout,
stderr, build and enumeration output, JUnit XML, evidence, copied inputs) and in the record's own
text (the gate document, argv, context). Everything exported or reported later (`gates export`,
--junit, --html, --json, GitHub outputs) is read from that scrubbed record. The record id is the
hash of what is stored, and the verdict is graded from the sealed, scrubbed folder at run time
exactly as `gates regrade` grades it later, so the two agree.

Values shorter than MIN_LENGTH characters are not scrubbed: replacing a 1-3 character value
everywhere would blank every digit or common word of the output (and change verdicts), while
hiding almost nothing. Text files get `REDACTED`; a binary file (not UTF-8) gets the same number
of `*` bytes, so its length and offsets (a tensor's shape) stay as they were.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|KEY|JWT|CREDENTIAL|AUTH|PRIVATE|PASS$", re.IGNORECASE)
MIN_LENGTH = 6
# A bare word: it stays well-formed wherever a secret was (XML text, a JSON string, a YAML plain
# scalar, shell text); `<redacted>` would break the JUnit XML it replaces a secret in.
REDACTED = "REDACTED"
# Larger raw files are scrubbed in place through a mapping (as binary: `*`), not read whole.
_MAX_SCAN_BYTES = 512 * 1024 * 1024
# How many leading bytes of a form are looked for before the form itself.
_KEY = 16


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """Whether the value of variable `name` is a secret: its name looks secret (SECRET_NAME, any
    case), or it is one of `extra` (redfirst.yaml's `secrets: names`, exact)."""
    return bool(SECRET_NAME.search(name)) or name in set(extra)


def secret_values(env: Mapping[str, str], declared: Iterable[tuple[str, str]] = (),
                  extra_names: Iterable[str] = ()) -> tuple[str, ...]:
    """The values to scrub, longest first (a secret that contains another is replaced whole)."""
    extra = frozenset(extra_names)
    found = {value for name, value in [*env.items(), *declared]
             if is_secret_name(name, extra) and len(value) >= MIN_LENGTH and value.strip()}
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


def _json_forms(value: str) -> set[str]:
    plain = json.dumps(value, ensure_ascii=False)[1:-1]
    ascii_ = json.dumps(value)[1:-1]
    # HTML-safe JSON (Go's encoder, Jinja's tojson): < > & ' as \u00XX
    safe = "".join(f"\\u{ord(c):04x}" if c in "<>&'" else c for c in ascii_)
    return {plain, ascii_, safe}


def _repr_forms(value: str) -> set[str]:
    # repr's own quoting, and the value inside a longer repr that quotes with ' (so ' is \')
    return {repr(value)[1:-1], ascii(value)[1:-1], repr(value + "'\"")[1:-4], ascii(value + "'\"")[1:-4]}


def _xml_forms(value: str) -> set[str]:
    amp = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    quot = amp.replace('"', "&quot;")
    attr = quot.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#09;")
    return {amp, quot, attr, quot.replace("'", "&#x27;"), quot.replace("'", "&apos;"),
            amp.replace('"', "&#34;").replace("'", "&#39;"), value.replace("&", "&amp;").replace("<", "&lt;")}


def _percent_forms(value: str) -> set[str]:
    found = set()
    for quoted in (urllib.parse.quote(value, safe=""), urllib.parse.quote(value), urllib.parse.quote_plus(value)):
        found |= {quoted, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quoted)}
    return found


def _base64_forms(raw: bytes) -> set[str]:
    """The value's own encodings, and for each alignment (0, 1 or 2 bytes into a group of three)
    the characters its bytes alone decide: what any longer encoded text holding it contains."""
    found = set()
    for k in range(3):
        encoded = base64.b64encode(b"\0" * k + raw).decode()
        core = encoded[-(-8 * k // 6):(8 * (k + len(raw))) // 6]
        if k == 0:
            found |= {encoded, encoded.rstrip("=")}
        found.add(core)
    return found | {f.replace("+", "-").replace("/", "_") for f in found}


_ESCAPES: tuple[Callable[[str], set[str]], ...] = (_json_forms, _repr_forms, _xml_forms)


def forms(value: str) -> frozenset[str]:
    """Every form of `value` this module scrubs: the value; its JSON string, Python repr and
    XML/HTML escapes, and each of those escaped once more (an XML-escaped repr is pytest's JUnit
    failure message); its percent-encodings (upper and lower hex); its base64 in the standard and
    URL-safe alphabets, with and without padding, and the part of it fixed at each of the three
    alignments inside a longer encoded text. A caller may rely on: the value is in the set, no
    form is empty, and a form shorter than the value is only a base64 core (at least 7 characters
    for a value of MIN_LENGTH bytes)."""
    once = {value}
    for escape in _ESCAPES:
        once |= escape(value)
    twice = set(once)
    for form in once:
        for escape in _ESCAPES:
            twice |= escape(form)
    return frozenset(twice | _percent_forms(value) | _base64_forms(_bytes(value)))


def _bytes(text: str) -> bytes:
    """`text` as the bytes it came from (an environment value keeps undecodable bytes as surrogates)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=16)
def _plan(secrets: tuple[str, ...]) -> tuple[tuple[bytes, bytes], ...]:
    """(form, key) pairs of every form of every secret as UTF-8 bytes, longest form first (a form
    inside a longer one is replaced with it). The key is the form's first _KEY bytes: forms of one
    value share few keys, so one look for a key that is absent passes over all its forms."""
    found = {_bytes(form) for secret in secrets for form in forms(secret)}
    return tuple((form, form[:_KEY]) for form in sorted(found, key=lambda f: (-len(f), f)))


def _replace(data: bytes, secrets: Iterable[str], binary: bool) -> bytes:
    """The one scrub: every form of every secret in `data` replaced, by REDACTED or (`binary`) by as
    many `*` bytes. UTF-8 is self-synchronizing, so a byte match in UTF-8 text is a character match."""
    present: dict[bytes, bool] = {}
    redacted = REDACTED.encode()
    for form, key in _plan(tuple(secrets)):
        hit = present.get(key)
        if hit is None:
            hit = present[key] = key in data
        if hit and form in data:
            data = data.replace(form, b"*" * len(form) if binary else redacted)
    return data


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every form (`forms`) of every secret replaced by REDACTED."""
    return _replace(text.encode("utf-8", "surrogatepass"), secrets, False).decode("utf-8", "surrogatepass")


def scrub_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """UTF-8 text scrubbed as `scrub_text`; other bytes get each form's bytes as as many `*`."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return _replace(data, secrets, True)
    return _replace(data, secrets, False)


def _scrub_in_place(path: Path, secrets: tuple[str, ...]) -> bool:
    """A file too large to read whole: each form overwritten with as many `*` through a shared
    mapping (its length kept, nothing read into memory); whether anything was."""
    import mmap

    hit = False
    with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), 0) as view:
        for form, _key in _plan(secrets):
            at = view.find(form)
            while at != -1:
                view[at:at + len(form)] = b"*" * len(form)
                hit = True
                at = view.find(form, at + len(form))
    return hit


def scrub_folder(folder: Path, secrets: tuple[str, ...]) -> list[str]:
    """Scrub every regular file under `folder` in place; the relative paths that changed."""
    if not secrets:
        return []
    changed = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size > _MAX_SCAN_BYTES:
                if _scrub_in_place(path, secrets):
                    changed.append(path.relative_to(folder).as_posix())
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

