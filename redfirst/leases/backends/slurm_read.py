"""How the slurm backend reads Slurm's answers: the JSON documents Slurm's own clients print
(`squeue --json`, `sinfo --json`, Slurm 21.08 and later, through its openapi/data_parser
plugins) and slurmrestd serves, at the API version the server offers, in one shape.

Slurm's text output is columns a job name or comment may break (`|` in a purpose); the JSON
form is what Slurm users script against. Where the installed Slurm has no JSON form of a
command (an older release, a build without the plugins: an unknown option or no document;
a newer release whose document is of another version, document_version), the backend reads
the text form, as before. Two reads stay text on every release: the
controller's elapsed time of a job (`squeue %M`, which the JSON form lacks, and which keeps
this machine's clock out of a lease's end time) and `scontrol show config` (no JSON form in
22.05). Cost: 22.05's `squeue --json` ignores `-j` and `-u` (it lists every job of the cluster,
about 4 KB a job; the backend filters), so a lease's read on a busy cluster is best served by
slurmrestd's `/job/{id}` (`rest`), which is asked first."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from redfirst import yamlsrc
from redfirst.leases.config import MAX_GPUS
from redfirst.leases.model import LeaseError

# API versions whose documents (slurmrestd's `/nodes`, `/job/{id}`; `squeue`/`sinfo --json`) have
# the shape read here, newest first: v0.0.39 and later change it (states as lists, numbers as {set, number} objects).
REST_VERSIONS = ("v0.0.38", "v0.0.37", "v0.0.36")
# Where slurmrestd lists what it serves (its OpenAPI document), newest path first.
OPENAPI_PATHS = ("/openapi/v3", "/openapi")
_VERSION_PATH = re.compile(r"^/slurm/(v\d+\.\d+\.\d+)/")


ANSWER_BYTES = yamlsrc.MAX_BYTES     # the most an HTTP answer (a document, never a job's log) may hold
ANSWER_SECONDS = 60.0                # the longest an HTTP answer may take to arrive whole


class AnswerUnbounded(ValueError):
    """An HTTP answer past ANSWER_BYTES or ANSWER_SECONDS (the message says which)."""


def bounded_body(resp: Any) -> bytes:
    """The body of a streamed `requests` answer, read as it arrives (one receive at a time). A caller may rely
    on: it returns within ANSWER_SECONDS holding at most ANSWER_BYTES, else AnswerUnbounded. A server sending
    without end, or a byte at a time (requests' timeout bounds each read, never the answer), took memory until
    the machine killed the client, or never returned. The resource controller's and slurmrestd's answers."""
    deadline = time.monotonic() + ANSWER_SECONDS
    read = getattr(resp.raw, "read1", None) or resp.raw.read     # urllib3 1.x has no read1
    parts: list[bytes] = []
    size = 0
    while True:
        part = read(65536, decode_content=True)
        if not part:
            return b"".join(parts)
        size += len(part)
        parts.append(part)
        if size > ANSWER_BYTES:
            raise AnswerUnbounded(f"answered more than {ANSWER_BYTES // 2**20} MiB")
        if time.monotonic() > deadline:
            raise AnswerUnbounded(f"was still answering after {ANSWER_SECONDS:g}s ({size} bytes)")


def rest_version(listing: Any) -> str | None:
    """The newest API version the server's OpenAPI document (`paths`) offers among REST_VERSIONS,
    or None where it offers none of them (the caller then reads through the Slurm CLI). A caller
    may rely on never being handed a version the server did not list."""
    paths = listing.get("paths") if isinstance(listing, Mapping) else None
    if not isinstance(paths, Mapping):
        return None
    offered = {m.group(1) for p in paths if isinstance(p, str) and (m := _VERSION_PATH.match(p))}
    return next((v for v in REST_VERSIONS if v in offered), None)


def document_version(doc: Mapping[str, Any]) -> str | None:
    """The API version a Slurm JSON document says it is in: `meta.plugin.type`
    (`openapi/v0.0.38`, Slurm 21.08 to 22.05) or `meta.plugins.data_parser`
    (`data_parser/v0.0.40`, 23.02 and later); None where it says none."""
    meta = doc.get("meta")
    if not isinstance(meta, Mapping):
        return None
    plugin, plugins = meta.get("plugin"), meta.get("plugins")
    named = (plugin.get("type") if isinstance(plugin, Mapping) else None) or \
        (plugins.get("data_parser") if isinstance(plugins, Mapping) else None)
    m = re.search(r"(v\d+\.\d+\.\d+)$", named) if isinstance(named, str) else None
    return m.group(1) if m else None


def cli_json(run: Callable[[list[str]], subprocess.CompletedProcess[str]], argv: list[str], key: str,
             missing: set[str]) -> list[dict[str, Any]] | None:
    """The list under `key` of `argv --json`, or None where it gave none (the caller reads the
    text form). A caller may rely on every list handed back being in a shape this module reads
    (a document whose version, document_version, is one of REST_VERSIONS): a command this Slurm
    has no JSON form of (the option refused, no JSON document printed, or one of another
    version) is added to `missing` and not asked for JSON again; a failure of the controller is
    not that, and the next read asks again."""
    if argv[0] in missing:
        return None
    out = run([*argv, "--json"])
    if out.returncode != 0:
        if re.search(r"unrecognized option|invalid option|unknown option|json", out.stderr, re.I):
            missing.add(argv[0])
        return None
    try:   # the one bounded loader: no RecursionError, no key read twice
        doc = yamlsrc.load_json_text(out.stdout, Path(f"{argv[0]} --json"))
    except yamlsrc.YamlError:
        doc = None
    found = doc.get(key) if isinstance(doc, dict) and document_version(doc) in REST_VERSIONS else None
    if not isinstance(found, list):
        missing.add(argv[0])
        return None
    return [x for x in found if isinstance(x, dict)]


def node_fields(n: Mapping[str, Any]) -> dict[str, str]:
    """A node of `sinfo --json` or slurmrestd's `/nodes` as the backend's labels read it."""
    return {"name": str(n.get("name", "")), "features": str(n.get("active_features") or n.get("features") or ""),
            "gres": str(n.get("gres") or ""), "state": str(n.get("state", "")).lower(),
            "cpus": str(n.get("cpus", "")), "memory": str(n.get("real_memory", "")),
            "partition": ",".join(str(p) for p in n.get("partitions") or [])}


def job_fields(j: Mapping[str, Any], live: set[str]) -> dict[str, str]:
    """A job of `squeue --json` or slurmrestd's `/job/{id}`: state, node, name, comment, time
    limit (minutes) and, for a job no longer live, its elapsed seconds (a live one's comes
    from the controller's count, never from end - start)."""
    state = str(j.get("job_state", ""))
    return {"state": state, "node": str(j.get("nodes", "")), "name": str(j.get("name", "")),
            "comment": str(j.get("comment", "") or ""), "limit": str(int(j.get("time_limit", 0) or 0)),
            "elapsed": "" if state in live
            else str(max(int(j.get("end_time", 0) or 0) - int(j.get("start_time", 0) or 0), 0))}


def gpu_indices(gres: str) -> list[int] | None:
    """The GPU indices of a GRES detail (`gpu:h200:2(IDX:0-1)`, `gpu:1(IDX:0,2)`), or None
    where it names none (a GRES without device files: Slurm cannot tell its GPUs apart).

    A caller may rely on distinct indices below MAX_GPUS, in the order given, read in time linear in the
    text: a list no box can hold (an index past MAX_GPUS, a descending range, an index named twice) is a
    LeaseError naming the GRES, never a list of 10**12 built first."""
    m = re.search(r"gpu[^\s(]*\(IDX:([0-9,\-]+)\)", gres)
    if m is None:
        return None
    found: list[int] = []
    for part in m.group(1).split(","):
        lo, _, hi = part.partition("-")
        first, last = int(lo or -1), int(hi or lo or -1)
        if not 0 <= first <= last < MAX_GPUS or len(found) + last - first >= MAX_GPUS:
            raise LeaseError(f"Slurm's GRES {gres!r} names GPU indices {part!r}: no box of at most {MAX_GPUS} "
                             f"GPUs has them")
        found.extend(range(first, last + 1))
    if len(set(found)) != len(found):
        raise LeaseError(f"Slurm's GRES {gres!r} names a GPU index twice")
    return found
