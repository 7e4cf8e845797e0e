"""The old path of :mod:`diskmodel.model.simulator.g4`, kept importable: importing it gives that
module itself (its private names and monkeypatching included)."""
import sys

from .simulator import g4 as _moved

sys.modules[__name__] = _moved
