"""redfirst mutations."""
