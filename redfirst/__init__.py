"""redfirst: gates, mutations, leases and checkers whose green means something.

One import package. Its four parts are the subpackages `redfirst.gates`, `redfirst.mutations`,
`redfirst.leases` and `redfirst.checkers`; what they share (the verdict words and exit codes, the
YAML loader, the command-line tools, secret scrubbing, process trees) lives in `redfirst` itself.
Imports flow shared -> leases -> gates -> mutations; checkers stand on the shared layer alone
(tests/layout/test_imports.py holds the code to that).

Import-light on purpose: a pytest plugin loads this package in every test run.
"""

__version__ = "0.1.0"
