"""The one reader of every file redfirst reads (gate, mutation and config files as YAML, store
files as JSON): every value keeps where it was written, so an error names file and line. Duplicate
keys are errors (PyYAML and json would silently keep the last), and every file is held to the same
bounds: size, depth, values, valid UTF-8."""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import jsonschema  # imported by validate() alone: a bounds check never pays for it

Path_ = tuple[str | int, ...]
# Bounds checked on the composed node graph before any value is built: an alias bomb (a few
# hundred bytes naming one list nine times per level) expands to billions of values, and a
# recursive alias to an endless one. Real gate, mutation and config files are far inside both.
MAX_VALUES = 100_000
MAX_DEPTH = 64
# Integers beyond 64 bits are no count, bound, timeout or id anywhere in these files; refusing
# them at the YAML layer keeps every later float() and comparison in range.
MAX_INT = 2**64
# Bytes of one file: a gate, mutation, config or store file is kilobytes; a file past this is
# refused before it is parsed (a parser's memory grows with its input).
MAX_BYTES = 16 * 2**20
_MERGE = "tag:yaml.org,2002:merge"  # the `<<` key: a directive, not a value
# libyaml's parser where PyYAML was built with it (several times faster); marks are the same.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _scalar(node: yaml.Node, file: Path) -> Any:
    """A scalar node's value, resolved and constructed as yaml.safe_load would (a fresh
    constructor: one keeps every node it built)."""
    try:
        value = yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except Exception as e:  # noqa: BLE001
        # PyYAML's constructors raise whatever their reading of the text does: an empty `!!int`
        # is an IndexError, `!!bool maybe` a KeyError, too many digits a ValueError.
        tag = node.tag.rsplit(":", 1)[-1]
        raise YamlError([Problem(file, node.start_mark.line + 1,
                                 f"YAML error: cannot read {node.value[:40]!r} as {tag}: {e}")]) from None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        shown = node.value if len(node.value) <= 24 else f"{node.value[:12]}...({len(node.value)} digits)"
        raise YamlError([Problem(file, node.start_mark.line + 1,
                                 f"integer {shown} is out of range (at most 2**64 in magnitude)")])
    return value


def check_bounds(root: yaml.Node, file: Path, recursion_ok: bool = False) -> None:
    """YamlError when a scalar cannot be built (or is an integer out of range), or when the
    document, aliases expanded, would hold more than MAX_VALUES values, nest deeper than
    MAX_DEPTH, or contain itself (a recursive alias; counted as one value with `recursion_ok`,
    for readers that never expand it). Linear in the composed nodes: each shared node is
    sized, and each scalar built, once."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def fail(node: yaml.Node, why: str) -> YamlError:
        return YamlError([Problem(file, node.start_mark.line + 1, why)])

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            if recursion_ok:
                return 1
            raise fail(node, "YAML error: a recursive alias (a node that contains itself)")
        if depth > MAX_DEPTH:
            raise fail(node, f"YAML error: nested deeper than {MAX_DEPTH} levels")
        total = 1
        if isinstance(node, yaml.ScalarNode) and node.tag != _MERGE:
            _scalar(node, file)  # a value that cannot be built is refused here, at its line
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            open_nodes.add(key)
            children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
            for child in children:
                total += size(child, depth + 1)
                if total > MAX_VALUES:
                    raise fail(node, f"YAML error: more than {MAX_VALUES} values once aliases are expanded "
                                     "(an alias bomb?)")
            open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root, 0)


@dataclass(frozen=True)
class Problem:
    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


class YamlError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems


@dataclass(frozen=True)
class Document:
    """A parsed YAML document: its data, and the line (1-based) of every path in it."""

    file: Path
    data: Any
    lines: dict[Path_, int]
    text: str
    root: yaml.Node | None = None  # the composed node graph, for readers that want values as written

    def line_of(self, path: Path_) -> int:
        # The nearest enclosing node that has a line: a missing key is reported at its parent.
        for n in range(len(path), -1, -1):
            if path[:n] in self.lines:
                return self.lines[path[:n]]
        return 1


_PLAIN: dict[type, str] = {yaml.MappingNode: "tag:yaml.org,2002:map", yaml.SequenceNode: "tag:yaml.org,2002:seq"}


def _convert(node: yaml.Node, path: Path_, lines: dict[Path_, int], file: Path) -> Any:
    """A node as plain data. A mapping or list is only ever a plain one: a tag on it (`!!omap`, `!!set`,
    `!!python/...`, `!custom`) is refused at its line, as a scalar tag the loader cannot build is; it was read as
    the untagged collection, so a file written for another reader loaded as if the tag were not there."""
    lines[path] = node.start_mark.line + 1
    plain = _PLAIN.get(type(node))
    if plain is not None and node.tag != plain:
        shown = node.tag.replace("tag:yaml.org,2002:", "!!")
        raise YamlError([Problem(file, node.start_mark.line + 1, f"YAML error: the tag {shown[:80]} on a "
                                 f"{'mapping' if isinstance(node, yaml.MappingNode) else 'list'} is not "
                                 "supported (write a plain mapping or list)")])
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                _merge(merged, key_node, value_node, path, lines, file)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise YamlError([Problem(file, key_node.start_mark.line + 1, "mapping keys must be plain scalars")])
            key = _scalar(key_node, file)
            if key in out:
                raise YamlError([Problem(file, key_node.start_mark.line + 1, f"duplicate key {key!r}")])
            out[key] = _convert(value_node, (*path, key), lines, file)
            lines[(*path, key)] = key_node.start_mark.line + 1
        lines[path] = node.start_mark.line + 1
        return {**{k: v for k, v in merged.items() if k not in out}, **out}
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*path, i), lines, file) for i, item in enumerate(node.value)]
    return _scalar(node, file)


def _merge(merged: dict[Any, Any], key_node: yaml.Node, value_node: yaml.Node, path: Path_,
           lines: dict[Path_, int], file: Path) -> None:
    """`<<: *base` (or `<<: [*a, *b]`): the keys of each base added to `merged`; they apply unless
    the mapping sets them itself. A key that two bases both give is refused at the `<<` line, as
    a key written twice is: YAML keeps the first base's value and silently drops the other (a
    second `append_only` rule would be lost)."""
    line = key_node.start_mark.line + 1
    sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
    for source in sources:
        value = _convert(source, path, lines, file)
        if not isinstance(value, dict):
            raise YamlError([Problem(file, line, "`<<` merges mappings only")])
        twice = [k for k in value if k in merged]
        if twice:
            raise YamlError([Problem(file, line, f"`<<` merges {twice[0]!r} from two mappings (line "
                                                 f"{source.start_mark.line + 1} and an earlier one): one would be "
                                                 "lost; set it once")])
        merged.update(value)


def compose(text: str, file: Path) -> yaml.Node | None:
    """The node graph of one YAML document, inside the bounds above; YamlError names file and
    line for syntax errors and for a document out of bounds."""
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        raise YamlError([Problem(file, line, f"YAML error: {e.problem or e}")]) from None
    except yaml.YAMLError as e:
        raise YamlError([Problem(file, 1, f"YAML error: {e}")]) from None
    except RecursionError:
        raise YamlError([Problem(file, 1, "YAML error: nested too deeply to parse")]) from None
    if node is not None:
        check_bounds(node, file)
    return node


def load_text(text: str, file: Path) -> Document:
    """Parse one YAML document; YamlError names file and line for syntax errors, a key written
    twice and a document out of bounds (over MAX_BYTES, MAX_VALUES, MAX_DEPTH)."""
    _check_size(len(text), file)
    node = compose(text, file)
    lines: dict[Path_, int] = {}
    try:
        data = None if node is None else _convert(node, (), lines, file)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise YamlError([Problem(file, mark.line + 1 if mark else 1, f"YAML error: {e}")]) from None
    return Document(file, data, lines, text, node)


def _check_size(size: int, file: Path) -> None:
    if size > MAX_BYTES:
        raise YamlError([Problem(file, 1, f"file of {size} bytes is over the bound of {MAX_BYTES} bytes")])


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def read_text(file: Path) -> str:
    """The text of `file`, decoded as UTF-8. YamlError naming file and line for a file that cannot
    be read, one that is not a regular file once links are followed (a FIFO, device, socket or
    directory: refused before a byte is read, so no reader ever blocks on one), one over
    MAX_BYTES, and invalid UTF-8 (the line of the first bad byte)."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, for ever.
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise YamlError([Problem(file, 1, f"cannot read: {e.strerror or e}")]) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        raise YamlError([Problem(file, 1, f"not a regular file ({kind})")])
    with os.fdopen(fd, "rb") as f:
        try:
            os.set_blocking(fd, True)
            data = f.read(MAX_BYTES + 1)
        except OSError as e:
            raise YamlError([Problem(file, 1, f"cannot read: {e.strerror or e}")]) from None
    _check_size(len(data), file)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = data.count(b"\n", 0, e.start) + 1, e.start - data.rfind(b"\n", 0, e.start)
        raise YamlError([Problem(file, line, f"not valid UTF-8: byte {data[e.start]:#04x} at column {column}")]) \
            from None


def load_file(file: Path) -> Document:
    """`file` read (read_text) and parsed (load_text): every bound and message of both."""
    return load_text(read_text(file), file)


def load_json(file: Path) -> Any:
    """The JSON document in `file` (a store file: record.json, verdict.json), held to the bounds
    of every other file: YamlError naming file and line for an unreadable file, invalid UTF-8,
    a syntax error, a key written twice, or nesting past MAX_DEPTH. Never a RecursionError."""
    return load_json_text(read_text(file), file)


def load_json_object(file: Path) -> dict[str, Any] | None:
    """The JSON object in a store file redfirst wrote and reads back as a hint (a proof, a read
    set, a baseline record, the sweep's survivors, a cache basis), or None where there is none to
    trust: a missing or unreadable file, a FIFO or other non-regular file (refused before a byte is
    read), invalid UTF-8, a key written twice, nesting past MAX_DEPTH, or a document that is not a
    JSON object. A caller may rely on: no hang, no exception, and a dict when not None."""
    try:
        data = load_json(file)
    except YamlError:
        return None
    return data if isinstance(data, dict) else None


class _Duplicate(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def load_json_text(text: str, file: Path) -> Any:
    """load_json on text already read."""
    _check_size(len(text), file)
    try:
        data = json.loads(text, object_pairs_hook=_unique)
    except _Duplicate as e:
        raise YamlError([Problem(file, _json_line(text, e.args[0]), f"duplicate key {e.args[0]!r}")]) from None
    except json.JSONDecodeError as e:
        raise YamlError([Problem(file, e.lineno, f"JSON error: {e.msg} (column {e.colno})")]) from None
    except RecursionError:
        data = None  # measured below, from the text
    if data is None or _json_depth(data) > MAX_DEPTH:
        line = _json_too_deep_line(text)
        if line:
            raise YamlError([Problem(file, line, f"JSON error: nested deeper than {MAX_DEPTH} levels")])
    return data


def load_toml_text(text: str, file: Path) -> dict[str, Any]:
    """A TOML document (pyproject.toml) held to the bounds of every other file: YamlError naming file and
    line for a syntax error or nesting past MAX_DEPTH (arrays, inline tables, dotted keys). Never a
    RecursionError (tomllib recurses once per level)."""
    import tomllib

    _check_size(len(text), file)
    try:
        data: dict[str, Any] | None = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"line (\d+)", str(exc))
        raise YamlError([Problem(file, int(at.group(1)) if at else 1, f"not valid TOML: {exc}")]) from None
    except RecursionError:
        data = None
    if data is None or _json_depth(data) > MAX_DEPTH:
        raise YamlError([Problem(file, _json_too_deep_line(text) or 1,
                                 f"TOML error: nested deeper than {MAX_DEPTH} levels")])
    return data


def _json_depth(data: Any) -> int:
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_DEPTH + 1:
            children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
            stack.extend((c, depth + 1) for c in children)
    return deepest


def _json_too_deep_line(text: str) -> int:
    """The line where the brackets of `text` first nest past MAX_DEPTH (strings skipped); 0 if never."""
    depth, line, in_string, escaped = 0, 1, False, False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_string:
            escaped, in_string = (not escaped and ch == "\\"), in_string and (escaped or ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif ch in "]}":
            depth -= 1
    return 0


def _json_line(text: str, key: str) -> int:
    """The line of the second `key` written in one object of `text`: YAML reads JSON and names it;
    else the line of the key's last occurrence."""
    try:
        load_text(text, Path("-"))
    except YamlError as e:
        if "duplicate key" in e.problems[0].message:
            return e.problems[0].line
    at = text.rfind(json.dumps(key))
    return text.count("\n", 0, max(at, 0)) + 1


def validate(doc: Document, schema: dict[str, Any]) -> list[Problem]:
    """Schema problems of `doc`, each at the line of the offending key or value."""
    validator = _validator(schema)
    errors = sorted(validator.iter_errors(doc.data), key=lambda e: list(map(str, e.absolute_path)))
    return sorted(set(_explain_all(doc, errors)), key=lambda p: (p.line, p.message))


def _explain_all(doc: Document, errors: list[jsonschema.ValidationError]) -> list[Problem]:
    """The problems of `errors`, less a missing required key that an unknown key of the same
    mapping misspells (`drvier` for `driver`: the misspelling is the one mistake to name)."""
    misspelt = {(tuple(e.absolute_path), name) for e in errors if e.validator == "additionalProperties"
                for name in _suggestions(e).values()}
    kept = [e for e in errors if not (e.validator == "required" and isinstance(e.instance, dict)
                                      and (tuple(e.absolute_path), _missing(e)) in misspelt)]
    return [p for e in kept for p in _explain(doc, e)]


def _missing(err: jsonschema.ValidationError) -> str:
    # jsonschema says "'driver' is a required property"; the name is the first quoted word
    return str(err.message).split("'")[1] if err.message.count("'") >= 2 else ""


def _allowed(err: jsonschema.ValidationError) -> list[str]:
    props = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
    return sorted(props)


def _suggestions(err: jsonschema.ValidationError) -> dict[str, str]:
    """Each unknown key of an `additionalProperties` error -> the allowed key it most likely
    misspells (difflib's close match), where there is one."""
    import difflib

    if not isinstance(err.instance, dict):
        return {}
    allowed = _allowed(err)
    out = {}
    for key in err.instance:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            if close:
                out[key] = close[0]
    return out


_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """One validator per schema object (each part loads its schema once): making one costs more
    than validating a small document, and a mutation run validates a thousand."""
    known = _VALIDATORS.get(id(schema))
    if known is None or known[0] is not schema:
        import jsonschema

        defs = schema.get("$defs", {})
        known = _VALIDATORS[id(schema)] = (schema, jsonschema.Draft202012Validator(_inline(schema, defs)))
    return known[1]


def _inline(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """The schema with each local `{"$ref": "#/$defs/NAME"}` replaced by what it names (a
    reference costs a resolver look-up at every use: twice the validation time); one that nests
    deeper than 20 (a recursive definition) is kept as a reference."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1 and depth < 20 \
                and ref[len("#/$defs/"):] in defs:
            return _inline(defs[ref[len("#/$defs/"):]], defs, depth + 1)
        return {k: v if k == "$defs" else _inline(v, defs, depth) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs, depth) for v in node]
    return node


def _fitting_branch(err: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """The errors of the one branch of a oneOf/anyOf whose type the value has (a gate file is a
    mapping or a list of them: a mapping with an unknown key fails the mapping branch on that key,
    and the list branch on its type); [] when no single branch fits."""
    branches: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in err.context or ():
        branches.setdefault(sub.schema_path[0] if sub.schema_path else None, []).append(sub)
    fitting = [errs for errs in branches.values()
               if not any(e.validator == "type" and len(e.absolute_path) == len(err.absolute_path) for e in errs)]
    return fitting[0] if len(fitting) == 1 else []


def _explain(doc: Document, err: jsonschema.ValidationError) -> list[Problem]:
    path = tuple(err.absolute_path)
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "top level"
    if err.validator in ("oneOf", "anyOf") and err.context:
        # The one branch whose type the value has names the mistake; else the branch that got furthest.
        fitting = _fitting_branch(err)
        if fitting:
            return _explain_all(doc, fitting)
        best = max(err.context, key=lambda e: (len(e.absolute_path), -len(list(e.context or []))))
        deepest = [e for e in err.context if len(e.absolute_path) == len(best.absolute_path)
                   and e.schema_path[0] == best.schema_path[0]]
        if len(best.absolute_path) > 0:
            return _explain_all(doc, deepest)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = _allowed(err)
        close = _suggestions(err)
        place = "at the top level" if not path else f"in {where}"
        return [
            Problem(doc.file, doc.line_of((*path, k)),
                    f"unknown key {k!r} {place}" + (f"; did you mean {close[k]!r}?" if k in close else "")
                    + (f" (allowed: {', '.join(allowed)})" if allowed else ""))
            for k in err.instance if k not in allowed
        ]
    if err.validator == "pattern" and err.validator_value == "\\S":
        return [Problem(doc.file, doc.line_of(path), f"{where}: must not be blank")]
    return [Problem(doc.file, doc.line_of(path), f"{where}: {err.message}")]
