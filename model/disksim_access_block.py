"""The old path of :mod:`diskmodel.model.simulator.access_block`, kept importable: importing it gives that
module itself (its private names and monkeypatching included)."""
import sys

from .simulator import access_block as _moved

sys.modules[__name__] = _moved
