"""``python -m pynamodb_autoinc``: the command line."""

import sys

from .cli import main

sys.exit(main())
