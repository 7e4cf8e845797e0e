"""The budget to advise when a calibration refuses one as too small: a value that is then accepted.

:class:`~diskmodel.calibrate.harness.measure.BudgetTooSmall` carries an
estimate of the minimum, priced from the reads timed before the refusal
(the probe's fastest read, or the failed stage's). The later stages' reads
can be dearer than that price, so rerunning with the estimate can be refused
again with a higher one. On a backend with a virtual clock (a simulated disk,
deterministic for its seed) the advice is checked instead: the calibration
is rerun on a fresh backend at the estimate, and at the next estimate while
that is refused, then bisected down towards the largest refused budget (to
two significant digits), so that the value named is the least one seen
accepted: a rerun with it is accepted.
"""
from __future__ import annotations

import math

__all__ = ["ADVICE_TRIES", "verified_minimum_s"]

#: Reruns tried at most before the advice is given unchecked.
ADVICE_TRIES = 12
#: The least step from one refused candidate to the next (a fraction of it).
_MIN_STEP = 0.05


def _round_up(x: float) -> float:
    """*x* rounded up to two significant digits (as BudgetTooSmall quotes a minimum)."""
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(f"{math.ceil(x / step * (1 - 1e-12)) * step:.2g}")


def verified_minimum_s(refused, make_backend, calibrate_kwargs: dict, *, tries: int = ADVICE_TRIES
                       ) -> tuple[float, bool]:
    """(budget [s] to advise, whether a calibration at that budget was seen to be accepted).

    *refused*: the BudgetTooSmall raised; *make_backend*: a function returning a fresh backend
    in the state the refused run started from (the same seed); *calibrate_kwargs*: the rest of
    the refused call's arguments but the budget (seed, kind, ...; progress is turned off).
    """
    from diskmodel.calibrate.harness.measure import BudgetTooSmall, calibrate

    kwargs = dict(calibrate_kwargs, progress=False)

    def accepted(budget_s: float):
        """None if a calibration at *budget_s* succeeds, else its refusal."""
        backend = make_backend()
        try:
            calibrate(backend, budget_s=budget_s, **kwargs)
        except BudgetTooSmall as exc:
            return exc
        finally:
            close = getattr(backend, "close", None)
            if callable(close):
                close()
        return None

    low, candidate, left = float(refused.budget_s), float(refused.minimum_s), tries
    while left:  # up from the estimate until a rerun is accepted
        left -= 1
        exc = accepted(candidate)
        if exc is None:
            break
        low = max(low, candidate)
        candidate = max(float(exc.minimum_s), _round_up(candidate * (1 + _MIN_STEP)))
    else:
        return candidate, False
    while left:  # then down towards the largest refused budget: the least accepted value, two digits
        middle = _round_up((low + candidate) / 2)
        if not low < middle < candidate:
            break
        left -= 1
        if accepted(middle) is None:
            candidate = middle
        else:
            low = middle
    return candidate, True
