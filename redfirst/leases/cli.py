"""The `leases` command: argument parsing and dispatch only."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from redfirst import clitools, scrub
from redfirst.leases.backends import Backend, open_backend
from redfirst.leases.config import LeasesConfig, load
from redfirst.leases.model import Lease, LeaseError, LeaseRequest, NotGranted, StaleLease, Unsatisfiable
from redfirst.leases.run import run_leased
from redfirst.leases.selector import SelectorError, parse
from redfirst.leases.verdicts import EXIT_ERROR, EXIT_LEASE_NOT_GRANTED, EXIT_OK

EXIT_REFUSED = 1     # renew/release of a stale lease


def _root(arg: str | None) -> Path | None:
    if arg:
        return Path(arg)
    here = Path.cwd()
    from redfirst import projectconfig

    for d in (here, *here.parents):
        if projectconfig.configures(d):
            return d
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return Path(top.stdout.strip()) if top.returncode == 0 and top.stdout.strip() else None


def _limit(text: str) -> int:
    """A count of audit events: a whole number SQLite's LIMIT can hold (a larger one was an OverflowError)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= n <= 2**63 - 1:
        raise argparse.ArgumentTypeError(f"{text} is not a count of events (0 to {2**63 - 1})")
    return n


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="leases", description="Schedule GPU boxes with fenced leases.")
    ap.add_argument("--root", help="repository root holding redfirst.yaml (default: the git top-level)")
    ap.add_argument("--backend", choices=("local", "slurm", "rc"), help="override leases.backend")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    clitools.add_version(ap)
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("boxes", help="list boxes and their labels")
    p.add_argument("--select", help="only boxes matching this selector")
    sub.add_parser("status", help="list live leases")

    def lease_args(p: argparse.ArgumentParser, box_flag: bool) -> None:
        where = p.add_mutually_exclusive_group(required=True)
        if box_flag:
            where.add_argument("--box", help="the box to lease")
        else:
            where.add_argument("box", nargs="?", help="the box to lease")
        where.add_argument("--select", help="any box matching this selector (gpu_model=h200,...)")
        size = p.add_mutually_exclusive_group()
        size.add_argument("--gpus", type=int, default=0, help="how many GPUs")
        size.add_argument("--whole-box", action="store_true", help="every GPU of the box")
        p.add_argument("--ttl", type=float, default=None, help="seconds without a heartbeat before it expires")
        p.add_argument("--wait", type=float, default=0.0, help="seconds to wait for a grant")
        p.add_argument("--max-runtime", type=float, default=None, help="seconds after which the lease ends")
        p.add_argument("--purpose", default="", help="why, for the audit log")

    lease_args(sub.add_parser("acquire", help="acquire a lease (it lives by TTL; renew it)"), box_flag=False)
    for name in ("renew", "release"):
        p = sub.add_parser(name, help=f"{name} a lease")
        p.add_argument("id", help="the lease id")
        p.add_argument("--token", help="refuse unless this is still the lease's token")
    p = sub.add_parser("run", help="run a command under a lease")
    lease_args(p, box_flag=True)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    p = sub.add_parser("audit", help="grants, renewals, expiries and releases")
    p.add_argument("--limit", type=_limit, default=50, help="how many events (newest)")
    for sp in sub.choices.values():
        # also after the subcommand name; absent there, the one before it stands
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    return clitools.add_conventions(ap)


def _request(args: argparse.Namespace, config: LeasesConfig) -> LeaseRequest:
    if args.select:
        parse(args.select)   # SelectorError is a usage error
    return LeaseRequest(box=args.box, select=args.select, gpus=args.gpus, whole_box=args.whole_box,
                        ttl=config.ttl if args.ttl is None else args.ttl, max_runtime=args.max_runtime,
                        purpose=args.purpose, secret_names=config.secret_names)


def _lease_line(lease: Lease) -> str:
    left = max(lease.expires_at - time.time(), 0.0)
    return clitools.one_line(f"{lease.id:<16} {lease.box:<10} {','.join(lease.slots):<14} {lease.token:<28} "
                             f"expires in {left:5.1f}s  {lease.holder} {lease.purpose}")


def _document(args: argparse.Namespace, code: int, **body: Any) -> str:
    """A `leases SUBCOMMAND --json` document, on `gates schema --output` (its leases shape)."""
    return json.dumps({"version": clitools.JSON_VERSION, "command": f"leases {args.command}", "exit": code, **body})


def main(argv: list[str] | None = None) -> int:
    return clitools.guard_output("leases", lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    ap = _parser()
    args = clitools.parse_args(ap, argv)
    try:
        config = load(_root(args.root))
        args.secret_names = config.secret_names     # `_fault` scrubs them too
        backend: Backend = open_backend(config, args.backend)
        if clitools.verbosity() > 0:   # -v: which backend answers, and from which configuration
            print(f"leases: backend {args.backend or config.backend} (config: {config.source})",
                  file=sys.stderr)
        return _dispatch(args, config, backend, ap)
    except SelectorError as exc:
        return _fault(args, EXIT_ERROR, f"bad selector: {exc}")
    except Unsatisfiable as exc:
        return _fault(args, EXIT_ERROR, str(exc))
    except NotGranted as exc:
        return _fault(args, EXIT_LEASE_NOT_GRANTED, f"not granted: {exc}")
    except StaleLease as exc:
        return _fault(args, EXIT_REFUSED, f"refused: {exc}")
    except (LeaseError, ValueError) as exc:
        return _fault(args, EXIT_ERROR, str(exc))


def _fault(args: argparse.Namespace, code: int, message: str) -> int:
    """Say why on stderr (and in the --json document), never a secret: a backend's message may quote its URL,
    whose password (RC_URL=http://user:password@host) is a secret wherever it is (`scrub.typed_text`)."""
    message = scrub.typed_text(message, names=getattr(args, "secret_names", ()))
    print(f"leases: {clitools.one_line(message)}", file=sys.stderr)
    if args.json:   # run --json: the command never ran (its stdout would have gone to stderr)
        extra = {"granted": False, "lease": None, "status": None} if args.command == "run" else {}
        print(_document(args, code, errors=[message], **extra))
    return code


def _dispatch(args: argparse.Namespace, config: LeasesConfig, backend: Backend,
              ap: argparse.ArgumentParser) -> int:
    if args.command == "boxes":
        boxes = backend.boxes()
        if args.select:
            sel = parse(args.select)
            boxes = [b for b in boxes if sel.matches(b.label_map)]
        if args.json:
            print(_document(args, EXIT_OK, boxes=[
                {"name": b.name, "backend": b.backend, "slots": list(b.slots), "labels": b.label_map}
                for b in boxes]))
        for b in [] if args.json else boxes:
            labels = " ".join(f"{k}={v}" for k, v in b.labels)
            print(clitools.one_line(f"{b.name:<12} {','.join(b.slots):<20} {labels}"))
        return EXIT_OK
    if args.command == "status":
        leases = backend.status()
        if args.json:
            print(_document(args, EXIT_OK, leases=[asdict(x) for x in leases]))
        else:
            for x in leases:
                print(_lease_line(x))
            if not leases:
                print("no live leases")
        return EXIT_OK
    if args.command == "acquire":
        lease = backend.acquire(_request(args, config), args.wait, detached=True)
        if args.json:
            print(_document(args, EXIT_OK, **asdict(lease)))
        else:
            print(f"{lease.id} {lease.token}")
        return EXIT_OK
    if args.command == "renew":
        lease = backend.renew(args.id, args.token)
        print(_document(args, EXIT_OK, **asdict(lease)) if args.json else _lease_line(lease))
        return EXIT_OK
    if args.command == "release":
        backend.release(args.id, args.token)
        print(_document(args, EXIT_OK, released=args.id) if args.json else f"released {args.id}")
        return EXIT_OK
    if args.command == "audit":
        events = backend.audit(args.limit)
        if args.json:
            print(_document(args, EXIT_OK, events=[asdict(e) for e in events]))
        for e in [] if args.json else events:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(e.at)) + f".{int(e.at % 1 * 1000):03d}Z"
            print(clitools.one_line(f"{stamp} {e.event:<8} {e.lease_id:<16} {e.box:<10} {','.join(e.slots):<14} "
                                    f"fence {e.fence:<6} {e.holder} {e.detail}"))
        return EXIT_OK
    if args.command == "run":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not cmd:
            ap.error("run needs a command after --")
        report: dict[str, Any] | None = {} if args.json else None
        code = run_leased(backend, _request(args, config), args.wait, cmd, report)
        if report is not None:
            print(_document(args, code, **report))
        return code
    ap.error(f"unknown command {args.command}")
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
