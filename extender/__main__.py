"""``python -m extender`` is ``kube-extender``."""

import sys

from extender.cli.main import main

sys.exit(main())
