"""Allow `python -m benchmark`."""

from .cli import run

run()
