"""``python -m diskmodel.model._jit``: compile every kernel of the simulator into the package's cache
(:func:`diskmodel.model._jit.main`)."""
import sys

from . import main

raise SystemExit(main(sys.argv[1:]))
