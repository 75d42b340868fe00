"""`python -m redfirst.gates.drivers.pytest_warm --serve SOCK --root R --preload M,N -- TESTS`: the
warm process (server.py)."""

import sys

from redfirst.gates.drivers.pytest_warm.server import main

sys.exit(main(sys.argv[1:]))
