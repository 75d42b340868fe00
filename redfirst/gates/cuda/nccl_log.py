"""What NCCL itself was asked to do, read from its own debug log (`NCCL_DEBUG=INFO`,
`NCCL_DEBUG_SUBSYS=COLL`): every collective, whichever path issued it (`torch.distributed`,
`distributed_c10d`, a `ProcessGroup` method, functional collectives, a name imported before
redfirst wrapped `torch.distributed`), logged by NCCL when it is enqueued, eagerly or inside
a capture; a replay enqueues nothing. NCCL writes and flushes one line per call, for example

    vm:1089:1089 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7fa8 recvbuff 0x7fa8 count 1024 datatype 9 op 0 root 0 comm 0x2355 [nranks=1] stream 0x2ac2

(NCCL 2.28.9, seen on an H100, docs/evidence/collective/). `NcclLog.between(a, b)` gives the
collectives logged between two `mark()`s as `{op, size, dtype}` entries, the shape of the
rank child's own log; redfirst.gates.cuda.rank_grade compares them across ranks ("nccl")."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

# ncclDataType_t, nccl.h
DTYPES = {0: "int8", 1: "uint8", 2: "int32", 3: "uint32", 4: "int64", 5: "uint64", 6: "float16", 7: "float32",
          8: "float64", 9: "bfloat16", 10: "float8_e4m3fn", 11: "float8_e5m2"}
OPS = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
       "Broadcast": "broadcast", "Reduce": "reduce", "Send": "send", "Recv": "recv", "AlltoAll": "all_to_all",
       "Gather": "gather", "Scatter": "scatter"}
LINE = re.compile(rb"NCCL INFO (\w+): opCount \S+ .*?count (\d+) datatype (\d+)")
MAX_BYTES = 64 << 20
KEPT = 1024                 # entries an arm's record keeps; what NCCL logged past them is summed up in one
MORE, UNREAD = "(more)", "(no log)"    # ops of the closing entries; no NCCL line reads as either


class NcclLog:
    """This process's NCCL collective log: `environment(path)` before NCCL starts, then marks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def environment(path: Path) -> dict[str, str]:
        """The variables that make NCCL log every collective it is asked for into `path`."""
        return {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "COLL", "NCCL_DEBUG_FILE": str(path)}

    def mark(self) -> int:
        try:
            return os.stat(self.path).st_size
        except OSError:
            return -1

    def between(self, start: int, end: int) -> list[dict[str, Any]] | None:
        """The collectives NCCL logged between two marks; None where there is no log to read
        (NCCL never opened it: then nothing is known, never "no collectives")."""
        if start < 0 <= end:
            start = 0       # NCCL opened its log after the first mark: all it holds was logged since
        if start < 0 or end < start or end - start > MAX_BYTES:
            return None
        try:
            with open(self.path, "rb") as f:
                f.seek(start)
                data = f.read(end - start)
        except OSError:
            return None
        found = []
        for m in LINE.finditer(data):
            name, count, dtype = m.group(1).decode(), int(m.group(2)), int(m.group(3))
            found.append({"op": OPS.get(name, name), "size": count, "dtype": DTYPES.get(dtype, f"nccl-type-{dtype}")})
        return found

    @staticmethod
    def kept(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
        """What an arm's record keeps of `between`'s entries. A caller may rely on two ranks' kept
        lists being equal only where their whole logs are: past KEPT entries, one closing entry
        {op: MORE, size: how many more, dtype: "sha256:..." of the rest}; and no log at all is
        never an empty list (which reads "NCCL was asked for nothing") but [{op: UNREAD}]."""
        if entries is None:
            return [{"op": UNREAD, "size": 0, "dtype": ""}]
        if len(entries) <= KEPT:
            return list(entries)
        rest = json.dumps(entries[KEPT:], sort_keys=True).encode()
        return [*entries[:KEPT], {"op": MORE, "size": len(entries) - KEPT,
                                  "dtype": "sha256:" + hashlib.sha256(rest).hexdigest()[:16]}]
