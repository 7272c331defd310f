"""`python -m mdad` runs the command line."""

from mdad.cli.app import main

if __name__ == "__main__":
    main()
