"""`python -m membase ...` (see `membase.cli`)."""

from membase.cli import cli

if __name__ == "__main__":
    cli()
