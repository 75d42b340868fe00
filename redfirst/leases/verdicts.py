"""The exit codes `leases` shares with the gate engine (its one import from `gates`)."""

from redfirst.verdict import EXIT_ERROR, EXIT_LEASE_NOT_GRANTED, EXIT_OK

__all__ = ["EXIT_ERROR", "EXIT_LEASE_NOT_GRANTED", "EXIT_OK"]
