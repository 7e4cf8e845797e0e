"""The old path of :mod:`diskmodel.model.simulator.writequeue`, kept importable: importing it gives that
module itself (its private names and monkeypatching included)."""
import sys

from .simulator import writequeue as _moved

sys.modules[__name__] = _moved
