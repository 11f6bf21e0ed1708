"""``python -m extender`` is ``kube-extender``."""

import sys

from extender.cli import main

sys.exit(main())
