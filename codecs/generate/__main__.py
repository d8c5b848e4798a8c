"""``python -m kconform.codecs.generate``: see ``command``."""

import sys

from .command import main

sys.exit(main())
