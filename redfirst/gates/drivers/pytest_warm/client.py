"""The client side of a warm run: `request` from the process that runs gates, CLIENT
(`python -S -c CLIENT SOCK TESTS -- ARGS`) for a person running the same command."""

from __future__ import annotations

import marshal
import os
import select
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from redfirst import process
from redfirst.gates.drivers.pytest_warm import wire


def request(sock: Path, tests: Sequence[str], args: Sequence[str], cwd: Path, env: dict[str, str],
            stdout: Path, stderr: Path, timeout: float,
            while_running: Callable[[], None] | None = None, then: dict[str, Any] | None = None
            ) -> process.Exited:
    """What CLIENT does, from the process that runs gates (no interpreter to start): hand
    the warm process the run's stdin, stdout and stderr and environment, and wait for the
    fork's end, the timeout, or the warm process's failure (exit 3: ERROR, never RED).
    `while_running` is called once the request is handed over (the caller's other work
    overlaps the run; the duration is the warm process's measure of the fork). Anything
    of the run still alive afterwards (the run marker finds what left the fork's process
    group) is killed, as process.run does for its own programs."""
    marker = process.new_marker()
    env = {**env, process.RUN_MARKER: marker}
    start = time.monotonic()
    exited: process.Exited | None = None
    raised: BaseException | None = None
    clean = False
    with open(stdout, "wb") as out, open(stderr, "wb") as err, open(os.devnull, "rb") as null, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(sock))
            asked: dict[str, Any] = {"args": list(args), "tests": list(tests), "cwd": str(cwd), "env": env}
            if then is not None:
                asked["next"] = then     # the run the caller makes next, where it knows it: a guess
            body = marshal.dumps(asked)
            wire.send(conn, body, [null.fileno(), out.fileno(), err.fileno()])
        except OSError as e:
            err.write(f"pytest-warm: the warm process failed: {e}\n".encode())
            exited = process.Exited(True, wire.INTERNAL_ERROR, None, False, time.monotonic() - start)
        if while_running is not None:
            try:
                while_running()
            except BaseException as e:  # this run still ends properly first
                raised = e
        if exited is None:
            try:
                ready, _, _ = select.select([conn], [], [], max(0.0, timeout - (time.monotonic() - start)))
                if not ready:
                    exited = process.Exited(True, None, None, True, time.monotonic() - start)
                else:
                    status = marshal.loads(wire.receive(conn)[0])
                    clean = bool(status.get("clean"))
                    code, sig = status.get("exit"), status.get("signal")
                    exited = process.Exited(True, wire.INTERNAL_ERROR if code is None and sig is None else code, sig,
                                            False, float(status.get("seconds", time.monotonic() - start)))
            except (OSError, ConnectionError, ValueError, EOFError, TypeError) as e:
                err.write(f"pytest-warm: the warm process failed: {e}\n".encode())
                exited = process.Exited(True, wire.INTERNAL_ERROR, None, False, time.monotonic() - start)
    # The connection is closed: a warm process still running the fork kills its group.
    # Unless the fork stopped all it started (it said so), look for the run's marker.
    if not clean:
        process.kill_marked(marker)
    if raised is not None:
        raise raised
    return exited


# Run as `python -S -c CLIENT SOCK TESTS -- ARGS`: built-in modules only (marshal, _socket,
# _signal) and no site import, so a run costs one bare interpreter start (about 10 ms;
# json and socket would double it). Same framing as wire.send/wire.receive; the socket sits in a
# folder only this user can enter.
CLIENT = r"""
import marshal, os, sys, time, _signal, _socket
def main(sock, tests, args):
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        conn.connect(sock)
        body = marshal.dumps({"args": args, "tests": tests, "cwd": os.getcwd(), "env": dict(os.environ)})
        data = len(body).to_bytes(8, "big") + body
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        while sent < len(data):
            sent += conn.send(data[sent:])
        answer = b""
        while len(answer) < 8 or len(answer) < 8 + int.from_bytes(answer[:8], "big"):
            more = conn.recv(65536)
            if not more:
                raise ConnectionError("the warm process closed the connection")
            answer += more
        status = marshal.loads(answer[8:8 + int.from_bytes(answer[:8], "big")])
    except (OSError, ConnectionError, ValueError, EOFError, TypeError) as e:
        print("pytest-warm: the warm process failed: %s" % e, file=sys.stderr)
        return 3
    if status.get("signal"):
        sys.stdout.flush()
        _signal.signal(status["signal"], _signal.SIG_DFL)
        os.kill(os.getpid(), status["signal"])
        time.sleep(1)
    return int(status.get("exit", 3))
cut = sys.argv.index("--")
sys.exit(main(sys.argv[1], sys.argv[2:cut], sys.argv[cut + 1:]))
"""
