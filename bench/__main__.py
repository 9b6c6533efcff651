# SPDX-License-Identifier: MIT
"""`python3 -m bench ARGS` (from the top of the tree) is `bench/run ARGS`."""

import sys

from .cli import main

sys.exit(main())
