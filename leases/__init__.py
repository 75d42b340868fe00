"""redfirst leases."""
