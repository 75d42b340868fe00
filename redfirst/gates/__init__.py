"""redfirst gates: declarative gate files, honest verdicts, kept evidence.

Import-light on purpose: every part imports `gates.verdict`, and a pytest plugin
loads this package in every test run.
"""

__version__ = "0.1.0"
