"""`python -m aah` runs the command line."""

from aah.cli import main

main()
