"""`python -m mdad` runs the command line."""

from mdad.cli.app import main

main()
