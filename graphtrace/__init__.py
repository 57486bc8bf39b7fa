"""graphtrace package (see docs in the README)."""
