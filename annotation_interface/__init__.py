"""annotation_interface package (see docs in the README)."""
