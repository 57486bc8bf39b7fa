"""Small utilities: atomic JSON writes, token counting, monkey patching."""
