"""The old path of :mod:`diskmodel.model.simulator.session`, kept importable: importing it gives that
module itself (its private names and monkeypatching included)."""
import sys

from .simulator import session as _moved

sys.modules[__name__] = _moved
