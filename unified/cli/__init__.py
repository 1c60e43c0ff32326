"""The ``unified-eval`` command line: ``app`` (typer) and the run/compare flag table."""

from unified.cli.app import app

__all__ = ["app"]
