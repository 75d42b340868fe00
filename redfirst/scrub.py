"""Secret values never reach the evidence store, in any form they are commonly written in.

A secret is the value of a variable whose name looks secret (`is_secret_name`: TOKEN, SECRET,
PASSW, PASSPHRASE, KEY, JWT, CREDENTIAL, AUTH or PRIVATE anywhere in it, or ending in PASS, _PWD or
_PAT; the password of a `scheme://user:password@host` URL in any variable; or one of the
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

# PASSPHRASE (a signing key's), _PWD (MYSQL_PWD; never PWD or OLDPWD, the shell's folders) and _PAT (GH_PAT, a
# personal access token) are as common in CI as PASSWORD.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PASSPHRASE|KEY|JWT|CREDENTIAL|AUTH|PRIVATE|PASS$|_PWD$|_PAT$",
                         re.IGNORECASE)
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


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:([^\s/@]+)@")


def url_passwords(value: str) -> set[str]:
    """The passwords of the `scheme://user:password@host` URLs in `value`, raw and percent-decoded
    (a URL holds a password percent-encoded; the program may print either)."""
    raw = set(_URL.findall(value))
    return raw | {urllib.parse.unquote(p) for p in raw}


def secret_values(env: Mapping[str, str], declared: Iterable[tuple[str, str]] = (),
                  extra_names: Iterable[str] = ()) -> tuple[str, ...]:
    """The values to scrub, longest first (a secret that contains another is replaced whole): the
    values of secret-looking names, and the password of a URL in any variable's value
    (`DATABASE_URL=postgres://user:password@host`: a name no pattern matches)."""
    extra = frozenset(extra_names)
    pairs = [*env.items(), *declared]
    found = {value for name, value in pairs if is_secret_name(name, extra)}
    found |= {p for _name, value in pairs for p in url_passwords(value)}
    found = {value for value in found if len(value) >= MIN_LENGTH and value.strip()}
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


def _bytes_repr_forms(value: str) -> set[str]:
    # print(b"...") and pytest's bytes comparisons: each byte outside printable ASCII as \xNN
    raw = _bytes(value)
    return {repr(raw)[2:-1], repr(raw + b"'\"")[2:-4]}


def _shell_forms(value: str) -> set[str]:
    """bash's xtrace and printf %q quoting: '...' with each ' as '\'' and, for a value with a
    control character, $'...': the control characters (and under LC_ALL=C every non-ASCII byte)
    as \\n, \\E or \\ooo, ' and \\ escaped."""
    def ansi_c(c: str, byte: int) -> str:
        letter = _C_ESCAPES.get(byte)
        return f"\\{letter}" if letter else c if 32 <= byte < 127 else f"\\{byte:03o}"

    in_utf8 = "".join(c if ord(c) > 127 else ansi_c(c, ord(c)) for c in value)
    in_c = "".join(ansi_c(chr(b), b) for b in _bytes(value))
    return {value.replace("'", "'\\''"), in_utf8, in_c}


_C_ESCAPES = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 27: "E", 39: "'", 92: "\\"}


def _hex_forms(raw: bytes) -> set[str]:
    # bytes.hex() and `xxd -p` (its wrapped lines are joined by _unwrapped), bare or with : or space
    return {form for text in (raw.hex(), raw.hex(":"), raw.hex(" ")) for form in (text, text.upper())}


_ESCAPES: tuple[Callable[[str], set[str]], ...] = (_json_forms, _repr_forms, _xml_forms)
# Forms of the value itself, each then escaped as the ones above (a bytes repr in JUnit XML).
_WRITTEN: tuple[Callable[[str], set[str]], ...] = (*_ESCAPES, _bytes_repr_forms, _shell_forms)


def forms(value: str) -> frozenset[str]:
    """Every form of `value` this module scrubs: the value; its JSON string, Python repr, bytes
    repr (`b'p\\xc3\\xa4...'`), XML/HTML escapes and shell quoting (`'it'\\''s'`, `$'...'`), and
    each of those escaped once more (an XML-escaped repr is pytest's JUnit failure message); its
    percent-encodings (upper and lower hex); its hex (lower and upper, bare or with : or space
    between bytes); its base64 in the standard and URL-safe alphabets, with and without padding,
    and the part of it fixed at each of the three alignments inside a longer encoded text. Wrapped
    base64 and hex (76, 64 or 60 columns) are matched by the scrub itself (`_unwrapped`). A caller
    may rely on: the value is in the set, no form is empty, and a form shorter than the value is
    only a base64 core (at least 7 characters for a value of MIN_LENGTH bytes)."""
    once = {value}
    for escape in _WRITTEN:
        once |= escape(value)
    twice = set(once)
    for form in once:
        for escape in _ESCAPES:
            twice |= escape(form)
    return frozenset(twice | _percent_forms(value) | _base64_forms(_bytes(value)) | _hex_forms(_bytes(value)))


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
    many `*` bytes, also where an encoder wrapped it over lines (`_unwrapped`). UTF-8 is
    self-synchronizing, so a byte match in UTF-8 text is a character match."""
    present: dict[bytes, bool] = {}
    redacted = REDACTED.encode()
    plan = _plan(tuple(secrets))
    for form, key in plan:
        hit = present.get(key)
        if hit is None:
            hit = present[key] = key in data
        if hit and form in data:
            data = data.replace(form, b"*" * len(form) if binary else redacted)
    return _unwrapped(data, plan, binary)


# A run of lines an encoder wrapped (base64 at 76 or 64 columns, `xxd -p` at 60): lines of 16 or
# more characters of the base64 (or hex) alphabets, each ended by a newline, then the last line.
# A run starts at a line's start, as an encoder's output does (unanchored, the scan costs 10x).
_WRAPPED = re.compile(rb"(?m)^(?:[A-Za-z0-9+/_=-]{16,}\r?\n)+[A-Za-z0-9+/_=-]*")
_ALPHABET = re.compile(rb"[A-Za-z0-9+/_=-]+")


def _unwrapped(data: bytes, plan: tuple[tuple[bytes, bytes], ...], binary: bool) -> bytes:
    """`data` with each form made only of encoder characters (base64 and hex) replaced where it
    spans the line breaks of a wrapped run: the run is read with its newlines taken out, and each
    match's characters, newlines inside it included, are replaced as `_replace` does."""
    wanted = [form for form, _key in plan if _ALPHABET.fullmatch(form)]
    if not wanted:
        return data
    out, done = [], 0
    for run in _WRAPPED.finditer(data):
        text = run.group(0)
        joined = text.replace(b"\r", b"").replace(b"\n", b"")
        if not any(form in joined for form in wanted):
            continue
        at = [i for i, byte in enumerate(text) if byte not in b"\r\n"]
        spans = [(m, m + len(form)) for form in wanted for m in _finds(joined, form)]
        cut, start = bytearray(), 0
        for first, last in _merged(spans):
            lo, hi = at[first], at[last - 1] + 1
            cut += text[start:lo]
            cut += bytes(c if c in b"\r\n" else 42 for c in text[lo:hi]) if binary else REDACTED.encode()
            start = hi
        out += [data[done:run.start()], bytes(cut), text[start:]]
        done = run.end()
    return b"".join(out) + data[done:] if out else data


def _finds(text: bytes, form: bytes) -> list[int]:
    found, at = [], text.find(form)
    while at != -1:
        found.append(at)
        at = text.find(form, at + 1)
    return found


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping (start, end) spans joined, in order."""
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def scrub_text(text: str, secrets: Iterable[str]) -> str:
    """`text` with every form (`forms`) of every secret replaced by REDACTED."""
    return _replace(text.encode("utf-8", "surrogatepass"), secrets, False).decode("utf-8", "surrogatepass")


def typed_text(text: str, env: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> str:
    """Free text a caller typed that redfirst stores (a lease's `--purpose`) with every form of every secret of
    `env` (default: this process's environment; `secret_values`, with the project's own secret `names`) and the
    password of any URL in the text itself replaced by REDACTED. A caller may store and print what it returns."""
    values = secret_values(os.environ if env is None else env, (("text", text),), names)
    return scrub_text(text, values) if values else text


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
    """Scrub every name under `folder` (`_scrub_names`), then every regular file's content in
    place; the relative paths (clean names) of the files whose name or content changed."""
    if not secrets:
        return []
    renamed = _scrub_names(folder, secrets)
    changed = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if any(rel == new or rel.startswith(new + "/") for new in renamed):
                changed.append(rel)
            if path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size > _MAX_SCAN_BYTES:
                if _scrub_in_place(path, secrets):
                    changed.append(rel)
                continue
            data = path.read_bytes()
            clean = scrub_bytes(data, secrets)
            if clean != data:
                path.write_bytes(clean)
                changed.append(rel)
    return sorted(set(changed))


def _scrub_names(folder: Path, secrets: tuple[str, ...]) -> list[str]:
    """Every file and folder under `folder` whose name holds a form of a secret renamed to the
    scrubbed name, deepest first (a record's file map is built from names: it then holds clean
    ones only). A name that scrubs like one already there gets `-2`, `-3`... before its suffix:
    nothing is overwritten. The new relative paths of the renamed entries."""
    moved = []
    for dirpath, dirs, files in os.walk(folder, topdown=False):
        for name in [*files, *dirs]:
            clean = os.fsdecode(_replace(os.fsencode(name), secrets, False))
            if clean == name:
                continue
            stem, suffix = os.path.splitext(clean)
            new, n = Path(dirpath) / clean, 1
            while os.path.lexists(new):
                n += 1
                new = Path(dirpath) / f"{stem}-{n}{suffix}"
            os.rename(Path(dirpath) / name, new)
            moved.append(new)
    # a folder renamed above a renamed entry: report each at the path it has now
    return [p.relative_to(folder).as_posix() for p in _now(folder, moved)]


def _now(folder: Path, moved: list[Path]) -> list[Path]:
    """The renamed entries under `folder`, found again by walking it (a renamed folder moves every
    path recorded below it)."""
    names = {p.name for p in moved}
    return [p for p in folder.rglob("*") if p.name in names]


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

