"""``python -m streamfilter``."""

import sys

from .cli.main import main

sys.exit(main())
