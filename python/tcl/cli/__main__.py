"""``python -m tcl.cli``: the ``tcl`` command."""

import sys

from tcl.cli import main

sys.exit(main())
