"""``python -m ophidis`` / ``ophidis-server``: the server entry point."""

import sys

from .main import main

if __name__ == "__main__":
    sys.exit(main())
