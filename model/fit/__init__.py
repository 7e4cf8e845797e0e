"""Fitting: every fitter of the model, apart from the model (astropy.modeling / lmfit style).

Pure: arrays and model objects in, frozen results out; no I/O, clocks or
processes. Every result derives from :class:`FitResult` (``params`` and
``bse`` as pandas Series, ``cov_params()``, ``conf_int(alpha)`` as a DataFrame
with ``lower``/``upper``, ``nobs``, ``df_resid``, ``summary()``,
``plot(ax=None)``, ``_repr_html_``, ``to_dict()``/``from_dict()``), over
named, bounded :class:`Parameters`.

- seek curves: :func:`fit_two_piece` (eq. 7, named as ``TwoPieceSeek``),
  :func:`fit_table`; from a spec sheet: :func:`solve_two_piece_seek_from_spec`;
- no mechanical seek: :func:`flatness_test`, :func:`fit_flat_latency`;
- zones of a rate profile: :func:`fit_zones`;
- PostMark: :func:`fit_io_parameters` (the I/O path), :func:`fit_lvm_mapping`
  (eq. 12's mapping costs), on :class:`Case` cells;
- a whole calibration: :func:`fit_calibration`;
- the per-kind file-system costs: :func:`fit_file_system_costs` on :class:`FsCase`
  cells (PostMark, :class:`SyncWrites`, :class:`SequentialWrite`), checked by
  :func:`leave_one_out`;
- the paper's Tables 4-6 are fitted by :mod:`diskmodel.model.fit.paper`
  (``fit_paper``, checked by ``leave_one_test_out``), which builds on the
  fitters here; this package does not import it back.
"""
from .base import FitResult, Parameter, Parameters
from .calibration import CalibrationMeasurements, CalibrationResult, Verdict, fit_calibration
from .filesystems import FsCase, SequentialWrite, SyncWrites, fit_file_system_costs, leave_one_out
from .latency import FlatLatencyFit, FlatnessTest, fit_flat_latency, flatness_test
from .postmark import (IO_PARAMETER_BOUNDS, Case, PostMarkFit, apply_io_parameters, fit_io_parameters,
                       fit_lvm_mapping)
from .seek import TableFit, TwoPieceFit, fit_table, fit_two_piece, residual_diagnostics
from .spec import solve_two_piece_seek_from_spec
from .zones import ZoneFit, fit_zones

__all__ = [
    "CalibrationMeasurements", "CalibrationResult", "Case", "FitResult", "FlatLatencyFit", "FlatnessTest",
    "FsCase", "IO_PARAMETER_BOUNDS", "Parameter", "Parameters", "PostMarkFit", "SequentialWrite",
    "SyncWrites", "TableFit", "TwoPieceFit", "Verdict", "ZoneFit", "apply_io_parameters", "fit_calibration",
    "fit_file_system_costs", "fit_flat_latency", "fit_io_parameters", "fit_lvm_mapping", "fit_table",
    "fit_two_piece", "fit_zones", "flatness_test", "leave_one_out", "residual_diagnostics",
    "solve_two_piece_seek_from_spec",
]
