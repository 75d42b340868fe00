"""What the four commands share on their command line: `--version`, a walk over every
parser (the help-text test and shell completion read the same tree), the completion
scripts, the envelope of a listing command's `--json` document, argument parsing
that answers a usage error under `--json` with one JSON error document, and the one guard on
writing their output."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from redfirst.verdict import EXIT_ERROR, Cause, MutationOutcome, Verdict

# The version of every --json document (gates schema --output): declared here only.
JSON_VERSION = 1

# Characters that end, rewrite or reorder a printed line: C0 and C1 controls (LF, CR, ESC), Unicode's
# line and paragraph separators, and the bidirectional overrides and isolates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(value: str) -> str:
    """`value` as one printed line: a path, message or stored text (a lease's purpose) never starts a line of
    its own, such as a forged `All 1 checks green` or audit event, nor colours one; each such character is
    escaped. Every text form that prints what a user or a repository wrote prints it through this."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), value)


def version() -> str:
    from importlib import metadata

    try:
        return metadata.version("redfirst")
    except metadata.PackageNotFoundError:   # run from a source tree that was never installed
        return "unknown"


def add_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"%(prog)s (redfirst {version()})",
                        help="print the version and exit")


# What `--color` and `-q`/`-v` said, for the output code that reads them (`styled`, `verbosity`):
# set while the command line is parsed, one process per command run.
_said: dict[str, Any] = {"color": "auto", "verbosity": 0}


class _Said(argparse.Action):
    """Keeps the option in the namespace as argparse would, and in `_said` for `styled`/`verbosity`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if self.dest == "color":
            _said["color"] = values
            setattr(namespace, self.dest, values)
        else:
            _said["verbosity"] += 1 if self.dest == "verbose" else -1
            setattr(namespace, self.dest, True)


def add_conventions(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`--color auto|always|never`, `-q/--quiet` and `-v/--verbose` on this parser and every
    subcommand's (an option a parser already has is left as it is): all four commands take them."""
    for _path, each in walk(parser):
        have = {o for a in each._actions for o in a.option_strings}
        if "--color" not in have:
            each.add_argument("--color", choices=("auto", "always", "never"), default="auto", action=_Said,
                              help="escape codes (colour, a progress bar): auto (a terminal, and NO_COLOR unset), "
                                   "always, never")
        if "-q" not in have:
            each.add_argument("-q", "--quiet", action=_Said, nargs=0, default=False,
                              help="less: no progress, no GREEN check lines, no lease notice")
        if "-v" not in have:
            each.add_argument("-v", "--verbose", action=_Said, nargs=0, default=False,
                              help="more: whole evidence ids (gates), every mutation's reason, each check's counts, the lease backend")
    return parser


def styled(stream: Any) -> bool:
    """Whether `stream` may carry escape codes (colour, bold, a progress bar's redraws).
    `--color always`: yes; `never`: no; `auto` (the default): only where the stream is a terminal,
    `NO_COLOR` is unset or empty and `TERM` is not `dumb`. A caller may rely on: every writer of
    styled output asks this, so no escape code reaches a stream for which it says no."""
    if _said["color"] != "auto":
        return bool(_said["color"] == "always")
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        terminal = False
    return terminal and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def verbosity() -> int:
    """-1 under `-q`, 1 under `-v`, 0 otherwise (`-q -v` cancel out)."""
    return max(-1, min(1, int(_said["verbosity"])))


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser below this one (itself first), with the words that reach it."""
    yield path, parser
    for name, sub in subparsers(parser).items():
        yield from walk(sub, (*path, name))


# Each command's top-level parser, named rather than imported: this module is the shared layer
# that every command imports, so it names them as an entry-point table does and loads them
# when completion asks (importing them here would close an import circle through every command).
COMMANDS: dict[str, str] = {
    "gates": "redfirst.gates.cli:parser",
    "mutate": "redfirst.mutations.commands.run:parser",
    "leases": "redfirst.leases.cli:_parser",
    "checkers": "redfirst.checkers.cli:_parser",
}
# `mutate check|sweep|promote|hazards|merge` are dispatched before argparse: shown here as subcommands.
MUTATE_SUBCOMMANDS: dict[str, str] = {
    name: f"redfirst.mutations.commands.{name}:parser" for name in ("check", "sweep", "promote", "hazards", "merge")}


def _load(target: str) -> argparse.ArgumentParser:
    import pkgutil

    parser: argparse.ArgumentParser = pkgutil.resolve_name(target)()
    return parser


def all_parsers() -> dict[str, argparse.ArgumentParser]:
    """The top-level parser of each command (mutate's subcommands are its own parsers)."""
    found = {command: _load(target) for command, target in COMMANDS.items()}
    for name, target in MUTATE_SUBCOMMANDS.items():
        found[f"mutate {name}"] = _load(target)
    return found


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted(o for a in parser._actions for o in a.option_strings)


# Values that are paths, where the parser does not say so by `type=Path` or a PATH/FILE/DIR metavar.
_PATH_DESTS = frozenset({"root", "junit", "html", "config", "evidence", "file", "dir", "targets", "reports",
                         "durations"})


def _takes_path(action: argparse.Action) -> bool:
    from pathlib import Path

    return action.nargs != 0 and (action.type is Path or str(action.metavar or "") in ("PATH", "FILE", "DIR")
                                  or action.dest in _PATH_DESTS)


def _tree() -> dict[str, dict[str, argparse.ArgumentParser]]:
    """command -> the words after it that reach a parser ("" for the command itself) -> that parser."""
    tree: dict[str, dict[str, argparse.ArgumentParser]] = {}
    for command, top in all_parsers().items():
        words = command.split()
        for path, parser in walk(top):
            tree.setdefault(words[0], {})[" ".join([*words[1:], *path])] = parser
    return tree


def _subwords(tree: dict[str, dict[str, argparse.ArgumentParser]], command: str, key: str) -> list[str]:
    below = [k.split()[-1] for k in tree[command] if k and " ".join(k.split()[:-1]) == key]
    return list(dict.fromkeys(below))


def completion(shell: str) -> str:
    """A completion script for all four commands, generated from their parsers (so it never lags
    an option): every subcommand (`mutate merge` included), every option, an option's choices, and
    file names where an option or argument takes a path. bash, zsh (through bashcompinit), fish."""
    if shell == "zsh":
        # zsh runs bash completion functions through bashcompinit.
        return ("(( $+functions[compdef] )) || { autoload -U +X compinit && compinit -u; }\n"
                "autoload -U +X bashcompinit && bashcompinit\n" + completion("bash"))
    if shell == "fish":
        return _fish(_tree())
    if shell != "bash":
        raise ValueError(f"unknown shell {shell!r} (bash | zsh | fish)")
    tree = _tree()
    lines = ["# bash completion for redfirst: eval \"$(gates completion bash)\"",
             "_redfirst_complete() {",
             '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" key="" w i',
             '  (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"',
             "  for ((i = 1; i < COMP_CWORD; i++)); do w=\"${COMP_WORDS[i]}\"; "
             "[[ $w == -* ]] || key=\"${key:+$key }$w\"; done",
             '  case "${COMP_WORDS[0]##*/} $key" in']
    for command, parsers in tree.items():
        for key, parser in sorted(parsers.items(), key=lambda kv: -len(kv[0])):
            words = [*_subwords(tree, command, key), *_options(parser)]
            paths = sorted(o for a in parser._actions if a.option_strings and _takes_path(a) for o in a.option_strings)
            choices = [(a.option_strings, a.choices) for a in parser._actions if a.option_strings and a.choices]
            lines.append(f'    "{command}{" " + key if key else ""}"*)')
            if paths or choices:
                lines.append('      case "$prev" in')
                if paths:
                    lines.append(f'        {"|".join(paths)}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
                for options, values in choices:
                    lines.append(f'        {"|".join(options)}) COMPREPLY=($(compgen -W "{" ".join(map(str, values))}" '
                                 f'-- "$cur")); return ;;')
                lines.append("      esac")
            files = any(not a.option_strings and _takes_path(a) for a in parser._actions)
            lines.append(f'      COMPREPLY=($(compgen -W "{" ".join(words)}" -- "$cur"))'
                         + ('; [[ $cur == -* ]] || COMPREPLY+=($(compgen -f -- "$cur"))' if files else "")
                         + "; return ;;")
    lines += ["  esac", "}", f"complete -o filenames -F _redfirst_complete {' '.join(tree)}", ""]
    return "\n".join(lines)


def _fish(tree: dict[str, dict[str, argparse.ArgumentParser]]) -> str:
    """fish's `complete` lines: a subcommand's options only once it was given, paths where taken."""
    def quoted(text: str | None) -> str:
        return "'" + " ".join(str(text or "").split()).replace("\\", "\\\\").replace("'", "\\'") + "'"

    lines = ["# fish completion for redfirst: gates completion fish | source"]
    for command, parsers in tree.items():
        lines.append(f"complete -c {command} -f")
        top = _subwords(tree, command, "")
        for key, parser in parsers.items():
            if key:
                condition = f"__fish_seen_subcommand_from {key.split()[-1]}"
            else:
                condition = f"not __fish_seen_subcommand_from {' '.join(top)}" if top else "true"
                if top:
                    lines.append(f"complete -c {command} -n {quoted(condition)} -a {quoted(' '.join(top))}")
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    continue
                if not action.option_strings:
                    if _takes_path(action):
                        lines.append(f"complete -c {command} -n {quoted(condition)} -F")
                    continue
                flags = "".join(f" -l {o[2:]}" if o.startswith("--") else f" -s {o[1:]}" for o in action.option_strings)
                if action.choices:
                    flags += f" -x -a {quoted(' '.join(map(str, action.choices)))}"
                elif _takes_path(action):
                    flags += " -r -F"
                elif action.nargs != 0:
                    flags += " -x"
                help_text = "" if action.help in (None, argparse.SUPPRESS) else action.help
                lines.append(f"complete -c {command} -n {quoted(condition)}{flags} -d {quoted(help_text)}")
    return "\n".join(lines) + "\n"


def listing(command: str, exit_code: int, items: Sequence[dict[str, Any]], **extra: Any) -> str:
    """The --json document of a deciding or listing command, on the output schema."""
    doc = {"version": JSON_VERSION, "command": command, "exit": exit_code, "items": list(items), **extra}
    return json.dumps(doc, indent=2)


def item(id_: str, kind: str, verdict: Verdict | MutationOutcome | str, reason: str = "",
         cause: Cause | str | None = None, counts: dict[str, Any] | None = None, evidence: str | None = None,
         **extra: Any) -> dict[str, Any]:
    verdict = verdict.value if isinstance(verdict, Verdict | MutationOutcome) else verdict
    cause = cause.value if isinstance(cause, Cause) else cause
    return {"id": id_, "kind": kind, "verdict": verdict, "cause": cause, "reason": reason,
            "counts": counts or {}, "requires": extra.pop("requires", {}), "evidence": evidence, **extra}


def wants_json(argv: Sequence[str]) -> bool:
    """`--json` or `--format json` among the options (not among a wrapped command's words after `--`)."""
    words = list(argv)
    words = words[:words.index("--")] if "--" in words else words
    return "--json" in words or "--format=json" in words or any(
        a == "--format" and b == "json" for a, b in zip(words, words[1:], strict=False))


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None,
               command: str | None = None) -> argparse.Namespace:
    """`parser.parse_args(argv)`; a usage error under `--json` also prints one JSON error
    document on stdout (exit 2 as ever), so a caller reading stdout is never left with nothing.
    argparse's own text still goes to stderr, unchanged."""
    words = list(sys.argv[1:] if argv is None else argv)
    if not wants_json(words):
        return parser.parse_args(words)
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            return parser.parse_args(words)
    except SystemExit as e:
        if e.code == 2:   # argparse's usage error: its last line is `prog: error: message`
            lines = said.getvalue().rstrip("\n").splitlines()
            message = lines[-1].split(": error: ", 1)[-1] if lines else "usage error"
            print(listing(command or _command(parser, words), 2, [], errors=[message]))
        raise
    finally:
        sys.stderr.write(said.getvalue())
        sys.stderr.flush()


def _command(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """`gates run`: the program and the subcommand named in `words`, if any."""
    names = subparsers(parser)
    sub = next((w for w in words if w in names), None)
    return f"{parser.prog} {sub}" if sub else parser.prog


class OutputError(Exception):
    """A write to stdout failed (a full device, a closed pipe): told apart from every other OSError."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))
        self.error = error


class _GuardedStdout:
    """sys.stdout whose failing write or flush raises OutputError; everything else is stdout's."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        try:
            return int(self._inner.write(text))
        except OSError as e:
            raise OutputError(e) from None

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError as e:
            raise OutputError(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def guard_output(command: str, body: Callable[[], int]) -> int:
    """`body()`'s exit code, its output flushed before it returns. A write to stdout that fails
    (`--json > /dev/full`, a reader gone) is one line on stderr, `COMMAND: cannot write the output:
    REASON`, and exit 2 (ERROR outranks any verdict: the caller reading stdout got nothing whole).
    A caller may rely on: an exit other than 2 from a command run through this guard means all its
    output was written; never a traceback for a failed write, nor Python's `Exception ignored` at exit."""
    real = sys.stdout
    sys.stdout = _GuardedStdout(real)
    try:
        code = body()
        sys.stdout.flush()
        return code
    except OutputError as e:
        _discard_pending(real)
        print(f"{command}: cannot write the output: {e}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        sys.stdout = real


def _discard_pending(stream: Any) -> None:
    """Point the stream's descriptor at /dev/null, so the bytes still buffered are dropped at exit
    instead of failing again (Python would report that as `Exception ignored`, exit 120)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return   # not a file (captured in-process): nothing flushes it at exit
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
