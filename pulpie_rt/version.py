"""The package version: one definition, read by pyproject.toml (dynamic) and by every layer."""

__version__ = "0.1.0"
