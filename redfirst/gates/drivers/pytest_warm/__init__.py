"""Driver `pytest-warm`: pytest in a child forked from a warm process.

The warm process (one per root, working folder, preload list and gate environment, a
child of the process that runs gates) imports pytest, the modules named in `preload:`,
the third-party modules the test files import, and collects the gate's test files; later
gates' test files are collected the same way while the tree is as it was at warm-up.
Each run hands the warm process its stdin, stdout, stderr and environment (from the
runner itself, or `python -S -c CLIENT` for a person), and the warm process forks. The
fork runs pytest with exactly the arguments of driver `pytest` when the tree is what the
warm process imported, or differs only in function bodies it can patch in place
(patcher); any other change makes the fork exec a fresh `python -m pytest`. Grading is
driver `pytest`'s.

The fork is a child subreaper and stops what its run started before it answers; the warm
process is one too, and stops what a fork that died left behind. A run whose client goes
away (timeout) has its fork's process group killed. A warm process that breaks with no
answer given is exit 3 (pytest's "internal error": ERROR, never a RED that could pass for
a kill).

driver.py runs in the process that runs gates; client.py hands a run over (wire.py is
their framing); server.py is the warm process and its forks (`python -m
redfirst.gates.drivers.pytest_warm --serve ...`), imported.py what it imported, reaper.py how it
stops what runs leave, patcher.py how a fork swaps edited function bodies in place.
"""

from redfirst.gates.drivers.pytest_warm.client import CLIENT, request
from redfirst.gates.drivers.pytest_warm.driver import DRIVER, WarmProcesses, WarmPytestDriver

__all__ = ("CLIENT", "DRIVER", "WarmProcesses", "WarmPytestDriver", "request")
