"""How the runner (or CLIENT) and the warm process talk over their Unix socket: each
message is one marshalled dict behind an 8-byte big-endian length; a request carries the
run's stdin, stdout and stderr as descriptors (SCM_RIGHTS). CLIENT (client.py) writes the
same framing with built-in modules only."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

INTERNAL_ERROR = 3            # pytest's own code for an internal error: graded ERROR
HEADER = struct.Struct("!Q")


def send(conn: socket.socket, payload: bytes, fds: Sequence[int] = ()) -> None:
    data = HEADER.pack(len(payload)) + payload
    sent = socket.send_fds(conn, [data], list(fds)) if fds else conn.send(data)
    if sent < len(data):    # (a receiver that has it all may close at once: sending nothing more is an error then)
        conn.sendall(data[sent:])


def receive(conn: socket.socket, with_fds: int = 0) -> tuple[bytes, list[int]]:
    fds: list[int] = []
    if with_fds:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, with_fds)
    else:
        data = conn.recv(1 << 16)
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        more = conn.recv(1 << 16)
        if not more:
            raise ConnectionError("connection closed mid-message")
        data += more
    size = HEADER.unpack_from(data)[0]
    return data[HEADER.size:HEADER.size + size], fds
