"""redfirst gates: declarative gate files, honest verdicts, kept evidence.

Import-light on purpose: a pytest plugin loads this package in every test run.
"""
