"""`python -m redfirst.mutations ...`: the same as the command."""

import sys

from redfirst.mutations.cli import main

sys.exit(main())
