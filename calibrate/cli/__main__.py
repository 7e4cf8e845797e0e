"""``python -m diskmodel.calibrate.cli``: the ``diskmodel`` command."""
import sys

from diskmodel.calibrate.cli import main

sys.exit(main())
