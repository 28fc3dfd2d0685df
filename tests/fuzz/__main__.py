"""``python -m tests.fuzz``: see the package docstring."""
from __future__ import annotations

import sys

from tests.fuzz.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
