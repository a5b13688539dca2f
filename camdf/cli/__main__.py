"""``python -m camdf.cli``: the same command line as the ``camdf`` script."""

import sys

from camdf.cli.commands import main

sys.exit(main())
