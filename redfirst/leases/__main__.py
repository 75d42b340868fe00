"""`python -m redfirst.leases ...`: the same as the command."""

import sys

from redfirst.leases.cli import main

sys.exit(main())
