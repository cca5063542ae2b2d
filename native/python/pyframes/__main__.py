"""``python3 -m pyframes``: see pyframes.cli."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
