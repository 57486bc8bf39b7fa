"""toolkits package (see docs in the README)."""
