"""``python -m msready``: the command-line interface."""

import sys

from msready.cli import main

sys.exit(main())
