"""Entry point: ``python -m baselines``."""

from baselines.cli import main

if __name__ == "__main__":
    main()
