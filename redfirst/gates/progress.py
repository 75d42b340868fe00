"""Progress of a long `gates run` / `mutate` on stderr (none under `-q`): a rich progress bar where
escape codes are wanted (`clitools.styled`), the same messages as plain lines when it is a log (a bar's redraws would
fill a CI log with carriage returns)."""

from __future__ import annotations

import re
import sys
import threading
from typing import Any, TextIO

from redfirst.verdict import WORDS

# A line that says one item is decided: `gate: GREEN`, `[3/10] m1 KILLED: ...`.
_DONE = re.compile(r"^(?:\[\d+/\d+\] )?\S+:? (" + "|".join(WORDS) + r")\b")


class Progress:
    def __init__(self, prefix: str, stream: TextIO | None = None) -> None:
        self.prefix = prefix
        self.stream = stream or sys.stderr
        self._bar: Any = None
        self._task: Any = None
        self._lock = threading.Lock()

    def start(self, total: int, what: str) -> None:
        from redfirst import clitools

        if not clitools.styled(self.stream) or total < 1:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        console = Console(file=self.stream, highlight=False, force_terminal=True)
        self._bar = Bar(TextColumn(f"{self.prefix}: {what}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=True)
        self._task = self._bar.add_task(what, total=total)
        self._bar.start()

    def __call__(self, message: str) -> None:
        from redfirst import clitools

        if clitools.verbosity() < 0:   # -q: no progress
            return
        if self._bar is None:
            # One write per line, one writer at a time: print() writes the text and the line end
            # apart, and another worker's line could come between them.
            with self._lock:
                self.stream.write(f"{self.prefix}: {message}\n")
                self.stream.flush()
            return
        self._bar.console.print(f"{self.prefix}: {message}", markup=False)
        if _DONE.match(message):
            self._bar.advance(self._task)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
