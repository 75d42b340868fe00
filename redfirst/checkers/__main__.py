"""`python -m redfirst.checkers ...`: the same as the command."""

import sys

from redfirst.checkers.cli import main

sys.exit(main())
