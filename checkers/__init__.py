"""redfirst checkers."""
