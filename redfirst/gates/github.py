"""GitHub Actions output for every redfirst command: workflow annotations, a step summary, step outputs.

Nothing here runs unless `GITHUB_ACTIONS=true`. Annotations are escaped as the runner
unescapes them and capped at what GitHub keeps per step (10 errors, 10 warnings); the rest
are listed in the Markdown summary appended to `$GITHUB_STEP_SUMMARY`. A NO_DECISION is
a warning, never a notice of success. Every command's report is read from its versioned
`--json` document: `gates run` calls `publish_gates` with it in process, `mutate` (and
`mutate merge`) `publish_document`; `checkers run` documents, which stand alone, go through
`python -m redfirst.gates.github publish DOC.json` from the composite action.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from redfirst.verdict import FAILING, PASSING, UNDECIDED, Cause, Verdict, exit_code, rank
from redfirst.verdict import verdict_of_exit as _verdict_of_exit
from redfirst.yamlsrc import YamlError, load_json

# GitHub keeps this many annotations of each level per step, and this many per job, and drops the rest silently.
MAX_PER_LEVEL = 10
MAX_PER_JOB = 50
# GitHub drops a step summary larger than 1 MiB whole; a margin for what the step wrote before.
SUMMARY_BUDGET = 1_000_000
# Annotations redfirst showed earlier in this job ($RUNNER_TEMP is the job's own folder).
JOB_COUNT_FILE = "redfirst-annotations"
# The vocabulary is redfirst.verdict's: errors are facts against the code, warnings missing evidence.
ERROR_VERDICTS = FAILING
WARNING_VERDICTS = UNDECIDED
PASSING_VERDICTS = PASSING
# `file:line: message` as gates, mutate and checkers print a problem (checkers add `@commit` to the file).
_PROBLEM = re.compile(r"^(?:ERROR: )?(?P<file>[^\s:@][^:@]*?)(?:@[0-9a-f]+)?:(?P<line>\d+): (?P<message>.+)$")


def verdict_of_exit(status: int) -> str:
    """What an exit status alone says (DESIGN section 1); 75 is `leases run`'s "no lease in time"."""
    return _verdict_of_exit(status).value


def escape_data(value: str) -> str:
    """The message part of a workflow command, as the runner unescapes it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A `key=value` property of a workflow command: data escaping plus `:` and `,`."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class Annotation:
    level: str                 # error | warning
    title: str
    message: str
    file: str | None = None    # relative to the workspace when it lies inside it
    line: int | None = None

    def command(self) -> str:
        props = []
        if self.file:
            props.append(f"file={escape_property(self.file)}")
            if self.line:
                props.append(f"line={self.line}")
        props.append(f"title={escape_property(self.title)}")
        return f"::{self.level} {','.join(props)}::{escape_data(self.message)}"

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else (self.file or "-")


@dataclass(frozen=True)
class Item:
    """One decided thing (gate, mutation, checker) in the shape every command shares."""

    id: str
    verdict: str
    cause: str | None
    reason: str
    counts: str
    file: str | None = None
    line: int | None = None
    findings: tuple[Annotation, ...] = ()


@dataclass(frozen=True)
class Report:
    title: str                                   # "gates", "mutations", "checkers"
    exit: int
    items: tuple[Item, ...]
    matrix: tuple[tuple[str, ...], ...] = ()     # mutations x gates: header row, then one row per mutation
    extra: Mapping[str, Any] = field(default_factory=dict)

    def item_verdict(self) -> str:
        """The worst verdict of the items (NO_DECISION for none), whatever `--allow-no-decision` made of the exit."""
        try:
            return verdict_of_exit(exit_code(item.verdict for item in self.items))
        except KeyError:  # a verdict this version does not know is not a pass
            return Verdict.ERROR.value

    def verdict(self) -> str:
        """The worse of the items' verdict and the exit status's: the exit status outranks anything printed."""
        return max(self.item_verdict(), self.exit_verdict() or Verdict.GREEN.value, key=rank)

    def exit_verdict(self) -> str | None:
        return None if self.exit == 0 else verdict_of_exit(self.exit)

    def exit_note(self) -> str | None:
        """Why the verdict is worse than the items say (a command that failed after its report), or None."""
        if rank(self.verdict()) <= rank(self.item_verdict()):
            return None
        return (f"the command's exit status {self.exit} outranks its report "
                f"({self.item_verdict() if self.items else 'no item'}): {self.verdict()}")

    def tally(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.items:
            out[item.verdict] = out.get(item.verdict, 0) + 1
        return out


def workspace_path(path: str, workspace: str | None = None) -> str:
    """`path` relative to the workspace when it lies inside it (GitHub links only those)."""
    base = Path(workspace or os.environ.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    p = Path(path)
    if not p.is_absolute():
        return path
    try:
        return p.resolve().relative_to(base).as_posix()
    except ValueError:
        return path


def split_source(source: str) -> tuple[str | None, int | None]:
    """`file:line` (as `Source` prints it) into its parts; `<command line>:0` is no place in a file."""
    head, sep, tail = source.rpartition(":")
    if not sep or not tail.isdigit():
        head, tail = source, ""
    if not head or head.startswith("<"):
        return None, None
    return workspace_path(head), int(tail) if tail and int(tail) > 0 else None


def annotations_of(report: Report) -> list[Annotation]:
    """Findings first (they point at lines), then one annotation per item that did not pass."""
    out: list[Annotation] = []
    note = report.exit_note()
    if note:
        level = "warning" if report.verdict() in WARNING_VERDICTS else "error"
        out.append(Annotation(level, f"{report.verdict()} redfirst {report.title}", note))
    for item in report.items:
        out.extend(item.findings)
    for item in report.items:
        if item.verdict in PASSING_VERDICTS:
            continue
        level = "error" if item.verdict in ERROR_VERDICTS else "warning"
        cause = f" ({item.cause})" if item.cause else ""
        reason = item.reason or "no reason given"
        if item.verdict in WARNING_VERDICTS:
            reason += " -- not a pass: the evidence to decide is missing"
        out.append(Annotation(level, f"{item.verdict} {item.id}", f"{item.verdict}{cause}: {reason}",
                              item.file, item.line))
    return out


def capped(found: Sequence[Annotation], budget: int = MAX_PER_JOB) -> tuple[list[Annotation], list[Annotation]]:
    """(shown, left out): the first MAX_PER_LEVEL of each level are shown, in order, `budget` at most."""
    shown: list[Annotation] = []
    left: list[Annotation] = []
    seen: dict[str, int] = {}
    for a in found:
        seen[a.level] = seen.get(a.level, 0) + 1
        (shown if seen[a.level] <= MAX_PER_LEVEL and len(shown) < budget else left).append(a)
    return shown, left


def _job_count_path(env: Mapping[str, str]) -> Path | None:
    temp = env.get("RUNNER_TEMP")
    return Path(temp) / JOB_COUNT_FILE if temp else None


def _job_shown(env: Mapping[str, str]) -> int:
    path = _job_count_path(env)
    try:
        return int(path.read_text()) if path else 0
    except (OSError, ValueError):
        return 0


def _cell(text: object) -> str:
    """`text` in one Markdown table cell as text, never markup: GitHub renders the step summary's
    HTML, so `<`, `>` and `&` are entities (a test's `<!--` cannot hide the rows after it)."""
    flat = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") or " "


def _code(text: object) -> str:
    """`text` in a table cell's code span (where entities would show as written): no backtick to
    end the span early."""
    return str(text).replace("`", "'").replace("|", "\\|").replace("\r", " ").replace("\n", " ") or " "


def closing_line(report: Report) -> str:
    if not report.items:
        return f"No {report.title} selected: nothing was decided (NO_DECISION)."
    tally = report.tally()
    note = report.exit_note()
    if note:
        return ", ".join(f"{n} {v}" for v, n in tally.items()) + f"; but {note}."
    if all(v in PASSING_VERDICTS for v in tally):
        return f"All {len(report.items)} {report.title} {'/'.join(sorted(tally))}."
    return ", ".join(f"{n} {v}" for v, n in tally.items()) + "."


def summary_markdown(report: Report, left_out: Sequence[Annotation], budget: int = SUMMARY_BUDGET) -> str:
    """The step summary, at most `budget` bytes: GitHub drops a larger one whole, verdict and all."""
    head = [f"### redfirst {report.title}: {report.verdict()}", "",
            "| item | verdict | cause | counts | reason | where |", "|---|---|---|---|---|---|"]
    rows: list[tuple[bool, str]] = []
    for item in report.items:
        where = f"{item.file}:{item.line}" if item.file and item.line else (item.file or "")
        passing = item.verdict in PASSING_VERDICTS
        verdict = item.verdict if passing else f"**{item.verdict}**"
        rows.append((passing, f"| `{_code(item.id)}` | {verdict} | {_cell(item.cause or '')} | {_cell(item.counts)} "
                              f"| {_cell(item.reason)} | {_cell(where)} |"))
    if not report.items:
        rows.append((False, "| (none) | **NO_DECISION** | config | | nothing was selected | |"))
    matrix: list[str] = []
    if report.matrix:
        header, *cells = report.matrix
        matrix += ["", "#### mutations x gates", "", "| " + " | ".join(_cell(h) for h in header) + " |",
                   "|" + "---|" * len(header)]
        matrix += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in cells]
    closing = ["", closing_line(report)]
    left: list[str] = []
    if left_out:
        left += ["", f"#### {len(left_out)} annotation(s) not shown (GitHub keeps {MAX_PER_LEVEL} errors and "
                     f"{MAX_PER_LEVEL} warnings per step, {MAX_PER_JOB} per job)", ""]
        left += [f"- {a.level} `{_code(a.where())}` {_cell(a.title)}: {_cell(a.message)}" for a in left_out]
    full = "\n".join(head + [r for _, r in rows] + matrix + closing + left) + "\n\n"
    if len(full.encode()) <= budget:
        return full
    # Too large: what did not pass first, then as much of the rest as fits, and say what is left out.
    ordered = [r for passing, r in rows if not passing] + [r for passing, r in rows if passing]
    size = sum(len(line.encode()) + 1 for line in head + closing) + 400
    kept_rows, size = _fitting(ordered, size, budget // 2)
    kept_matrix, size = _fitting(matrix, size, budget * 3 // 4)
    kept_left, size = _fitting(left, size, budget)
    dropped = len(ordered) - len(kept_rows) + len(matrix) - len(kept_matrix) + len(left) - len(kept_left)
    note = ["", f"**{dropped} line(s) and item(s) not shown here**: GitHub keeps 1 MiB of step summary; "
                "the log lists every item."]
    return "\n".join(head + kept_rows + kept_matrix + closing + kept_left + note) + "\n\n"


def _fitting(lines: Sequence[str], size: int, limit: int) -> tuple[list[str], int]:
    kept = []
    for line in lines:
        n = len(line.encode()) + 1
        if size + n > limit:
            break
        kept.append(line)
        size += n
    return kept, size


def active(env: Mapping[str, str] | None = None) -> bool:
    return (env if env is not None else os.environ).get("GITHUB_ACTIONS") == "true"


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)


def publish(report: Report, env: Mapping[str, str] | None = None, stream: TextIO | None = None) -> bool:
    """Annotations on `stream` (stderr), the table on $GITHUB_STEP_SUMMARY, outputs on $GITHUB_OUTPUT.

    Returns False (and writes nothing) outside GitHub Actions.
    """
    env = env if env is not None else os.environ
    if not active(env):
        return False
    # stderr: the runner reads workflow commands from both streams (actions/runner ScriptHandler.cs),
    # and stdout stays what the command prints (one JSON document under --json).
    stream = stream or sys.stderr
    found = annotations_of(report)
    if not report.items:
        found.insert(0, Annotation("warning", f"NO_DECISION redfirst {report.title}",
                                   "nothing was selected, so nothing was decided -- not a pass"))
    earlier = _job_shown(env)
    shown, left_out = capped(found, MAX_PER_JOB - earlier)
    for a in shown:
        print(a.command(), file=stream)
    stream.flush()
    count_path = _job_count_path(env)
    if count_path is not None and shown:
        try:
            count_path.write_text(str(earlier + len(shown)))
        except OSError:
            pass
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    try:
        written = Path(summary_path).stat().st_size if summary_path else 0
    except OSError:
        written = 0
    _append(summary_path, summary_markdown(report, left_out, max(SUMMARY_BUDGET - written, 4096)))
    counts = json.dumps(report.tally(), separators=(",", ":"))
    _append(env.get("GITHUB_OUTPUT"), f"verdict={report.verdict()}\ncounts={counts}\n")
    return True


def gates_report(doc: Mapping[str, Any], exit_status: int | None = None) -> Report:
    """The report of a `gates run` document (redfirst.gates.report.document, the one its --json prints).

    `exit_status`: the command's, when it failed after grading (a report it could not write);
    otherwise the items' own, whatever `--allow-no-decision` made of the exit.
    """
    report = document_report(doc)
    return dataclasses.replace(report, exit=exit_status or exit_code(item.verdict for item in report.items))


def publish_gates(doc: Mapping[str, Any], env: Mapping[str, str] | None = None,
                  stream: TextIO | None = None, exit_status: int | None = None) -> bool:
    """What `gates run` calls after every run (annotations on stderr, so `--json` stays one document)."""
    if not active(env):
        return False
    return publish(gates_report(doc, exit_status), env, stream)


def _counts_text(counts: Any) -> str:
    if isinstance(counts, Mapping):
        from redfirst.gates.report import describe_counts

        return describe_counts(dict(counts))
    return str(counts or "-")


def document_report(doc: Mapping[str, Any], root: str | None = None) -> Report:
    """A report of one versioned `--json` document of `gates run`, `mutate` or `checkers run`.

    `root` is the project root the document's relative paths (a mutation's target) start from.
    """
    raw_items = doc.get("items") or []
    kinds = {str(i.get("kind")) for i in raw_items}
    title = "mutations" if "matrix" in doc or "mutation" in kinds else "checkers" if "checker" in kinds else "gates"
    items = []
    for raw in raw_items:
        findings = tuple(_finding(f, root) for f in raw.get("findings") or ()) + _failed_cases(raw, root)
        file, line = split_source(str(raw.get("source") or ""))
        reason = str(raw.get("reason") or "")
        if title == "mutations" and raw.get("file"):
            # A surviving mutation is a fact about the code line it edited: annotate that line.
            if file:
                reason = f"{reason} (declared at {file}:{line or 1})"
            target = Path(root or ".") / str(raw["file"])
            file, line = workspace_path(str(target.resolve())), raw.get("line") or None
        problem = _PROBLEM.match(reason.strip()) if not file else None
        if problem:  # an item that names no source but whose reason starts `file:line:` (a config error)
            file = workspace_path(str((Path(root or ".") / problem.group("file")).resolve()))
            line = int(problem.group("line")) or None
        counts = f"{len(findings)} finding(s)" if title == "checkers" else _counts_text(raw.get("counts"))
        items.append(Item(str(raw.get("id")), str(raw.get("verdict")), raw.get("cause"), reason, counts,
                          file, line, findings))
    return Report(title, int(doc.get("exit", 2)), tuple(items), _matrix(doc.get("matrix")))


def _failed_cases(raw: Mapping[str, Any], root: str | None) -> tuple[Annotation, ...]:
    """An annotation at each failed case's file:line (a gate's `failures`), titled with its id."""
    out = []
    for f in raw.get("failures") or ():
        if not isinstance(f, Mapping):
            continue
        file, line = f.get("file"), f.get("line")
        path = workspace_path(str((Path(root or ".") / str(file)).resolve())) if file else None
        out.append(Annotation("error", f"FAILED {f.get('id')} ({raw.get('id')})", str(f.get("message") or ""),
                              path, line if isinstance(line, int) and line > 0 else None))
    return tuple(out)


def _finding(f: Mapping[str, Any], root: str | None) -> Annotation:
    file, message = str(f.get("file") or ""), str(f.get("message") or "")
    if not file or file.startswith("commit "):  # a commit finding names a commit, not a file of the tree
        return Annotation("error", str(f.get("rule") or "finding"), f"{file}: {message}" if file else message)
    line = f.get("line")
    path = workspace_path(str((Path(root) / file).resolve())) if root else workspace_path(file)
    return Annotation("error", str(f.get("rule") or "finding"), message, path,
                      max(int(line), 1) if isinstance(line, int) else None)


def _matrix(matrix: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(matrix, Mapping) or not matrix.get("rows"):
        return ()
    gates = [str(g) for g in matrix.get("gates") or ()]
    rows = [("mutation", *gates)]
    for mutation, cells in matrix["rows"].items():
        rows.append((str(mutation), *(str(cells.get(g, "-")) for g in gates)))
    return tuple(rows)


def publish_document(doc: Mapping[str, Any], env: Mapping[str, str] | None = None,
                     stream: TextIO | None = None, root: str | None = None) -> bool:
    """What `mutate` calls with its `--json` document (`root`: document_report's). Outside GitHub
    Actions nothing is written, and the report is not built (a large run's paths resolved for
    nothing)."""
    return active(env) and publish(document_report(doc, root), env, stream)


def _line(value: str) -> str:
    # one log line: a line break in a reason would let the text after it read as a workflow command
    return value.replace("\r", " ").replace("\n", " ")


def text(report: Report) -> str:
    """The plain log of a document, for a step whose command printed JSON instead of its table."""
    out = [_line(f"{a.where()}: {a.title}: {a.message}") for item in report.items for a in item.findings]
    for item in report.items:
        cause = f" ({item.cause})" if item.cause else ""
        out.append(_line(f"{item.verdict:<11} {item.id}{cause}  {item.counts}  {item.reason}".rstrip()))
    if report.matrix:
        header, *rows = report.matrix
        widths = [max(len(r[i]) for r in report.matrix) for i in range(len(header))]
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in report.matrix]
    out.append(closing_line(report))
    return "\n".join(out)


def problems_in(stderr: str) -> tuple[Annotation, ...]:
    """The `file:line: message` problems a command printed before it stopped, as annotations."""
    out = []
    for raw in stderr.splitlines():
        m = _PROBLEM.match(raw.strip())
        if m and m.group("file").strip():
            out.append(Annotation("error", "redfirst problem", m.group("message"),
                                  workspace_path(m.group("file")), int(m.group("line")) or None))
    return tuple(out)


def stopped_report(command: str, exit_status: int, stderr: str) -> Report:
    """One item for a command that exited without a report: never a pass, even at exit 0."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1][:300] if lines else "it printed nothing on stderr"
    status = exit_status if exit_status != 0 else 2
    reason = f"`{command}` exited {exit_status} before it reported any item: {last}"
    title = {"mutate": "mutations", "checkers run": "checkers"}.get(command, "gates")
    return Report(title, status, (Item(command, verdict_of_exit(status), Cause.CONFIG.value if status == 2 else None,
                                       reason, "-", findings=problems_in(stderr)),))


def _read_document(path: str, exit_status: int | None) -> tuple[Mapping[str, Any], bool]:
    """(the document, True), or (an ERROR item saying why there is none, False): no document is never a pass."""
    try:
        doc = load_json(Path(path))
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            return doc, True
        problem = "is not a versioned redfirst document (no `items` list)"
    except YamlError as e:  # the one loader: no FIFO hang, no RecursionError, a key written twice refused
        problem = f"could not be read as JSON ({str(e)[:300]})"
    code = 2 if exit_status in (None, 0) else exit_status
    from redfirst.clitools import JSON_VERSION

    return {"version": JSON_VERSION, "exit": code, "items": [
        {"id": "redfirst", "verdict": Verdict.ERROR.value, "cause": Cause.CONFIG.value,
         "reason": f"the command's JSON output {path} {problem}; its exit status was {exit_status}"}]}, False


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m redfirst.gates.github", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    pub = sub.add_parser("publish", help="print, annotate and summarize one --json document")
    pub.add_argument("document")
    pub.add_argument("--exit-status", type=int, help="the command's exit status (outranks the document's)")
    pub.add_argument("--root", help="the project root the document's relative paths start from")
    pub.add_argument("--stderr", help="a file holding the command's stderr: its `file:line:` problems are "
                                      "annotated when there is no document")
    nd = sub.add_parser("no-decision", help="report one NO_DECISION that kept the command from running")
    nd.add_argument("--id", required=True)
    nd.add_argument("--reason", required=True)
    nd.add_argument("--cause", default="environment")
    st = sub.add_parser("stopped", help="report a command that exited before it reported (ERROR, RED, ...)")
    st.add_argument("--id", required=True, help="the command, e.g. `gates run`")
    st.add_argument("--exit-status", type=int, required=True)
    st.add_argument("--stderr", help="a file holding what it printed on stderr (its `file:line:` problems)")
    args = p.parse_args(argv)
    if args.command == "no-decision":
        report = Report("checks", 3, (Item(args.id, Verdict.NO_DECISION.value, args.cause, args.reason, "-"),))
    elif args.command == "stopped":
        report = stopped_report(args.id, args.exit_status, _read_text(args.stderr) if args.stderr else "")
    else:
        read, readable = _read_document(args.document, args.exit_status)
        doc = dict(read)
        if args.exit_status is not None and readable:  # the exit status outranks what the document says
            doc["exit"] = args.exit_status
        report = document_report(doc, args.root)
        if not readable and args.stderr:
            found = problems_in(_read_text(args.stderr))
            report = dataclasses.replace(report, items=tuple(dataclasses.replace(i, findings=found)
                                                             for i in report.items))
    print(text(report), flush=True)
    publish(report)
    # a document of RED or ERROR items never exits 0, whatever status the command gave
    worst = report.item_verdict()
    return report.exit or (exit_code([worst]) if worst in FAILING else 0)


if __name__ == "__main__":
    sys.exit(main())
