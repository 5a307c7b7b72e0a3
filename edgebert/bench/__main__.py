"""`python -m edgebert.bench ...`: the same as `edgebert bench ...`."""

from __future__ import annotations

import sys

from edgebert.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", *sys.argv[1:]]))
