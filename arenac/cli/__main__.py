"""`python -m arenac.cli`: the same entry point as the `arenac` script."""

from arenac.cli import main

main()
