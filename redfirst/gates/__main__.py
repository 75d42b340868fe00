"""`python -m redfirst.gates ...`: the same as the command."""

import sys

from redfirst.gates.cli import main

sys.exit(main())
