"""``python -m pynamodb_autoinc``: the command line."""

from .cli import main

raise SystemExit(main())
