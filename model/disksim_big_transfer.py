"""The old path of :mod:`diskmodel.model.simulator.big_transfer`, kept importable: importing it gives that
module itself (its private names and monkeypatching included)."""
import sys

from .simulator import big_transfer as _moved

sys.modules[__name__] = _moved
