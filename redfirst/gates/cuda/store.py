"""A key-value store on loopback: the rendezvous of a rank group, and the simulated backend's wire.

The launcher (redfirst.gates.cuda.ranks) serves it on 127.0.0.1; every rank connects with
`Client`. `set` stores bytes under a key; `get` waits for the key up to a timeout and raises
`StoreTimeout` when it never comes, so a rank waiting for a peer that never arrives ends
instead of hanging. Each request is one JSON line, each reply one JSON line (values base64).
No torch: CI's ranks exchange real bytes through this.
"""

from __future__ import annotations

import base64
import json
import socket
import socketserver
import threading
import time
from typing import Any


class StoreTimeout(TimeoutError):
    """A key did not appear within the timeout (a peer never arrived or never sent)."""


class Server:
    """The store, served by daemon threads until `close`. `keys()` says what has arrived."""

    def __init__(self) -> None:
        data: dict[str, bytes] = {}
        ready = threading.Condition()
        self._data, self._ready = data, ready

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for line in self.rfile:
                    req = json.loads(line)
                    reply: dict[str, Any] = {"ok": True}
                    if req["op"] == "set":
                        with ready:
                            data[req["key"]] = base64.b64decode(req["value"])
                            ready.notify_all()
                    else:
                        deadline = time.monotonic() + float(req["timeout"])
                        with ready:
                            while req["key"] not in data and time.monotonic() < deadline:
                                ready.wait(min(0.5, max(0.0, deadline - time.monotonic())))
                            value = data.get(req["key"])
                        reply = {"ok": value is not None,
                                 "value": base64.b64encode(value).decode() if value is not None else None}
                    self.wfile.write((json.dumps(reply) + "\n").encode())
                    self.wfile.flush()

        class Threaded(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Threaded(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def keys(self) -> set[str]:
        with self._ready:
            return set(self._data)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Client:
    """One rank's connection to the store."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self._sock = socket.create_connection((host, port), timeout=None)
        self._file = self._sock.makefile("rwb")

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self._file.write((json.dumps(request) + "\n").encode())
        self._file.flush()
        line = self._file.readline()
        if not line:
            raise ConnectionError("the rank group's store closed the connection")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def set(self, key: str, value: bytes) -> None:
        self._ask({"op": "set", "key": key, "value": base64.b64encode(value).decode()})

    def get(self, key: str, timeout: float) -> bytes:
        reply = self._ask({"op": "get", "key": key, "timeout": timeout})
        if not reply["ok"]:
            raise StoreTimeout(f"{key!r} did not arrive within {timeout:g} s")
        return base64.b64decode(reply["value"])

    def close(self) -> None:
        self._file.close()
        self._sock.close()
