"""obstrace package (see docs in the README)."""
