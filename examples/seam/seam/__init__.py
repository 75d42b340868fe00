"""A small numpy model with a break-point capture seam (see README.md)."""
