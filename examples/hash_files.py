#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""hash_files.py: the fhash Python module in a few lines. Prints what `sha256sum FILE...` prints, through
fhashd where it can be reached (the system bus, or --address ADDR), else in this process."""
import sys
from typing import List, Optional

import fhash


def main(argv: List[str]) -> int:
    address: Optional[str] = None
    if len(argv) > 2 and argv[1] == "--address":
        address, argv = argv[2], argv[2:]
    status = 0
    with fhash.Client(address=address) as client:
        for r in client.results(argv[1:]):  # each as soon as it is known
            if r.ok:
                print(f"{r.digest}  {r.name}")
            else:
                print(f"sha256sum: {r.name}: {r.message}", file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
