"""The covariance of a bounded least-squares fit, against statsmodels' OLS on the same linear problem."""
from __future__ import annotations

import numpy as np
import statsmodels.api as sm
from scipy.optimize import least_squares

from diskmodel.model.fit.base import least_squares_covariance


def _problem(seed=3):
    """y = a x1 + b x2 + noise, with a ~ 1e-5 (a time) and b ~ 1e9 (a rate's inverse scale): sizes 1e14 apart."""
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(1e3, 5e4, 40)          # operations
    x2 = rng.uniform(1e-10, 1e-9, 40)       # bytes / 1e18, so that b x2 is of order 0.1-1
    y = 2e-5 * x1 + 8e8 * x2 + rng.normal(0, 0.02, 40)
    return np.column_stack([x1, x2]), y


def test_badly_scaled_parameters_keep_their_variance():
    X, y = _problem()
    ols = sm.OLS(y, X).fit()
    scale = [1e-5, 1e9]
    solution = least_squares(lambda p: X @ p - y, [1e-5, 1e9], x_scale=scale, method="trf",
                             bounds=([0, 0], [1, 1e12]))
    covariance, dof = least_squares_covariance(solution, scale)
    assert dof == 38
    np.testing.assert_allclose(solution.x, ols.params, rtol=1e-6)
    # both standard errors as OLS gives them; a pseudo-inverse of the raw J^T J put the rate's at ~0
    np.testing.assert_allclose(np.sqrt(np.diag(covariance)), ols.bse, rtol=1e-6)


def test_a_parameter_held_at_its_bound_has_no_variance_and_takes_no_degree_of_freedom():
    X, y = _problem()
    scale = [1e-5, 1e9]
    solution = least_squares(lambda p: X @ p - y, [1e-5, 1e9], x_scale=scale, method="trf",
                             bounds=([0, 0], [1e-5, 1e12]))  # a's bound below its value: held there
    covariance, dof = least_squares_covariance(solution, scale)
    assert solution.active_mask[0] != 0 and dof == 39
    assert np.isnan(covariance[0]).all() and np.isnan(covariance[:, 0]).all()
    assert covariance[1, 1] > 0
