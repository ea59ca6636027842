"""The package's version: the one place it is written (setup.cfg reads it, CHANGELOG.md names it)."""

__version__ = "0.3.0"
