"""membase package (see docs in the README)."""
