"""The one result base of every fit: named, bounded parameters with their covariance.

:class:`Parameter` and :class:`Parameters` describe what a fit estimates (in
the lmfit / astropy.modeling spirit: a name, a value, bounds, a unit, and
whether it was varied). :class:`FitResult` is the base every fitter's result
derives from; a result provides ``parameters``, ``covariance`` (p x p, NaN
where a variance is not defined), ``nobs`` and ``df_resid``, and the base
gives, once for all of them (statsmodels style):

* ``params`` and ``bse`` (pandas Series), ``cov_params()`` (a DataFrame),
  ``conf_int(alpha=0.05)`` (a DataFrame with columns ``lower``, ``upper``),
  ``to_frame()``;
* ``summary()``, ``plot(ax=None)``, ``_repr_html_``;
* ``to_dict()`` / ``FitResult.from_dict()``: JSON-safe (NaN and inf become
  None) and faithful: every dataclass field is written and read back, apart
  from the ones marked transient (e.g. a statsmodels results object); reading
  is a pydantic v2 model of the class's fields (the schema library every JSON
  of diskmodel is read with), so a bad field is named by its path.
"""
from __future__ import annotations

import dataclasses
import html
import math
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Optional, Union

import numpy as np
import pandas as pd
from pydantic import (AfterValidator, ConfigDict, PlainValidator, Strict, TypeAdapter, ValidationError,
                      create_model)

from .._checks import evolve as _evolve
from .._checks import _is_number, finite_scalar, flag, show
from ..stacks.schema import validation_error

__all__ = ["Parameter", "Parameters", "FitResult", "json_safe", "frozen_array", "least_squares_covariance",
           "TRANSIENT"]

#: Field metadata of a result field that to_dict leaves out (from_dict gives its default).
TRANSIENT = {"transient": True}


def least_squares_covariance(solution, x_scale) -> tuple[np.ndarray, float]:
    """(covariance, df_resid) of a ``scipy.optimize.least_squares`` *solution*: s^2 (J^T J)^-1.

    A parameter held at a bound (``active_mask`` != 0) is not free: its row
    and column are NaN, and it takes no degree of freedom.  J^T J is
    inverted in units of *x_scale* (the parameters' typical sizes), then
    scaled back: parameters of very different sizes (a rate of 1e9 bytes/s
    beside a time of 1e-5 s) put J^T J's eigenvalues 1e30 apart, and a
    pseudo-inverse of the raw matrix drops the small ones as if they were
    zero, which reads as a variance of zero.  A direction the data do not
    fix (a zero diagonal) is NaN too.  With no degree of freedom left, all
    is NaN.
    """
    r, J = np.asarray(solution.fun, dtype=float), np.asarray(solution.jac, dtype=float)
    scale = np.broadcast_to(np.asarray(x_scale, dtype=float), (J.shape[1],))
    free = np.asarray(solution.active_mask) == 0
    dof = r.size - int(free.sum())
    covariance = np.full((J.shape[1], J.shape[1]), np.nan)
    if dof > 0 and free.any():
        Js = J[:, free] * scale[free]
        block = np.linalg.pinv(Js.T @ Js) * (float(r @ r) / dof)
        block = block * np.outer(scale[free], scale[free])
        unidentified = np.diag(block) <= 0
        block[unidentified, :] = np.nan
        block[:, unidentified] = np.nan
        covariance[np.ix_(free, free)] = block
    return covariance, float(dof)


def frozen_array(name: str, values, dtype=float) -> np.ndarray:
    """*values* as a read-only 1-D (or as given) ndarray of *dtype*; ValueError naming *name*."""
    try:
        array = np.array(values, dtype=dtype)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of {np.dtype(dtype).name} (got {show(values)})") from None
    array.setflags(write=False)
    return array


def json_safe(value):
    """*value* with numpy scalars and arrays as Python values, NaN and inf as None (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One fitted quantity.

    ``value`` may be NaN (not determined, e.g. no rotation on a flash device);
    otherwise it lies within [``lower``, ``upper``]. ``vary`` is False for a
    quantity held as given rather than fitted (its standard error is NaN).
    """

    name: str
    value: float
    lower: float = -math.inf
    upper: float = math.inf
    unit: str = ""
    vary: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string (got {show(self.name)})")
        for name in ("value", "lower", "upper"):
            number = getattr(self, name)
            if not _is_number(number) or (name != "value" and math.isnan(number)):
                what = "a number or NaN" if name == "value" else "a number or +-inf"
                raise ValueError(f"{name} of {self.name!r} must be {what} (got {show(number)})")
        if not self.lower < self.upper:
            raise ValueError(f"bounds of {self.name!r} must satisfy lower < upper (got {self.lower!r}, {self.upper!r})")
        if not math.isnan(self.value) and not self.lower <= self.value <= self.upper:
            raise ValueError(f"value of {self.name!r} must lie within [{self.lower!r}, {self.upper!r}] "
                             f"(got {self.value!r})")
        if not isinstance(self.unit, str):
            raise ValueError(f"unit of {self.name!r} must be a string (got {show(self.unit)})")
        object.__setattr__(self, "value", float(self.value))
        object.__setattr__(self, "lower", float(self.lower))
        object.__setattr__(self, "upper", float(self.upper))
        object.__setattr__(self, "vary", flag(f"vary of {self.name!r}", self.vary))

    def evolve(self, **changes) -> "Parameter":
        return _evolve(self, changes)


class Parameters(Mapping):
    """An ordered, immutable mapping name -> :class:`Parameter`."""

    __slots__ = ("_items",)

    def __init__(self, parameters=()):
        items = {}
        for p in parameters:
            if not isinstance(p, Parameter):
                raise ValueError(f"parameters must be Parameter objects (got {show(p)})")
            if p.name in items:
                raise ValueError(f"parameters: the name {p.name!r} is given twice")
            items[p.name] = p
        object.__setattr__(self, "_items", items)

    def __setattr__(self, name, value):
        raise AttributeError("Parameters is immutable")

    def __getitem__(self, name) -> Parameter:
        return self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Parameters({', '.join(f'{n}={p.value:.6g}' for n, p in self._items.items())})"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._items)

    @property
    def estimates(self) -> np.ndarray:
        """The values, in order, as an array."""
        return np.array([p.value for p in self._items.values()], dtype=float)

    def evolve(self, **values) -> "Parameters":
        """A copy with some parameters' values changed (validated; unknown names raise ValueError)."""
        unknown = sorted(set(values) - set(self._items))
        if unknown:
            raise ValueError(f"unknown parameter(s) {', '.join(unknown)} (parameters: {', '.join(self._items)})")
        return Parameters(p.evolve(value=values[n]) if n in values else p for n, p in self._items.items())

    def to_dict(self) -> list:
        return [dataclasses.asdict(p) for p in self._items.values()]

    @classmethod
    def from_dict(cls, data) -> "Parameters":
        return cls(Parameter(**{**p, "value": _float(p["value"]), "lower": _float(p["lower"], -math.inf),
                                "upper": _float(p["upper"], math.inf)}) for p in data)


def _float(value, none=math.nan) -> float:
    return none if value is None else float(value)


class FitResult:
    """The base of every fit result (see the module doc).

    A subclass is a frozen dataclass that provides ``parameters``
    (:class:`Parameters`), ``covariance`` (ndarray, p x p), ``nobs`` and
    ``df_resid`` (fields or properties), and sets the class attribute
    ``model`` (its name in ``to_dict()``, by which ``from_dict`` finds it).
    """

    model: ClassVar[str] = ""
    _registry: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("model"):
            FitResult._registry[cls.model] = cls

    # statsmodels-like ------------------------------------------------------
    @property
    def params(self) -> pd.Series:
        """Estimates, by parameter name."""
        return pd.Series(self.parameters.estimates, index=list(self.parameters.names), dtype=float)

    @property
    def bse(self) -> pd.Series:
        """Standard errors (NaN where a variance is not defined: held, at a bound, not identified)."""
        variance = np.diag(np.asarray(self.covariance, dtype=float))
        return pd.Series(np.sqrt(np.where(variance < 0, np.nan, variance)), index=list(self.parameters.names),
                         dtype=float)

    def cov_params(self) -> pd.DataFrame:
        names = list(self.parameters.names)
        return pd.DataFrame(np.asarray(self.covariance, dtype=float), index=names, columns=names)

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Normal-approximation intervals ``params -+ z(1 - alpha/2) * bse`` (columns ``lower``, ``upper``)."""
        from scipy.stats import norm

        alpha = finite_scalar("alpha", alpha, positive=True)
        if alpha >= 1:
            raise ValueError(f"alpha must lie in (0, 1) (got {alpha!r})")
        z = float(norm.ppf(1 - alpha / 2))
        p, se = self.params, self.bse
        # an interval never leaves the parameter's domain (a cost is never negative): cut at the
        # bounds, and to_frame's ``note`` says where it was cut
        ps = self.parameters.values()
        low = np.maximum(p - z * se, [q.lower for q in ps])
        high = np.minimum(p + z * se, [q.upper for q in ps])
        return pd.DataFrame({"lower": low, "upper": high}, index=p.index)

    def notes(self, alpha: float = 0.05) -> pd.Series:
        """Per parameter, what a reader must know beside its value: held (not fitted), on a bound
        with no standard error, or an interval cut at a bound ("" otherwise)."""
        from scipy.stats import norm

        z = float(norm.ppf(1 - alpha / 2))
        out = []
        for q, estimate, se in zip(self.parameters.values(), self.params, self.bse):
            on_bound = estimate in (q.lower, q.upper)
            if not q.vary:
                out.append("held, not fitted")
            elif on_bound and not np.isfinite(se):
                out.append("on its bound: no standard error")
            elif not np.isfinite(se):
                out.append("no standard error (not identified)")
            elif estimate - z * se < q.lower or estimate + z * se > q.upper:
                out.append("interval cut at its bound")
            else:
                out.append("")
        return pd.Series(out, index=self.params.index, dtype=object)

    def to_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """One row per parameter: value, bse, the interval, the bounds, the unit, whether it was varied."""
        ci = self.conf_int(alpha)
        ps = self.parameters.values()
        return pd.DataFrame({"value": self.params, "bse": self.bse, "lower": ci["lower"], "upper": ci["upper"],
                             "lower_bound": [p.lower for p in ps], "upper_bound": [p.upper for p in ps],
                             "unit": [p.unit for p in ps], "vary": [p.vary for p in ps],
                             "note": self.notes(alpha)},
                            index=list(self.parameters.names))

    # reporting -----------------------------------------------------------------
    def _summary_title(self) -> str:
        return f"{self.model} fit: {self.nobs} observations, {self.df_resid:g} residual degrees of freedom"

    def _summary_notes(self) -> list[str]:
        """Lines after the parameter table (subclasses add diagnostics)."""
        return []

    def summary(self) -> str:
        frame = self.to_frame().drop(columns=["lower_bound", "upper_bound", "vary"])
        return "\n".join([self._summary_title(), frame.to_string(float_format=lambda v: f"{v:.6g}"),
                          *self._summary_notes()])

    def _repr_html_(self) -> str:
        notes = "".join(f"<br>{html.escape(line)}" for line in self._summary_notes())
        return (f"<div><b>{html.escape(self._summary_title())}</b>{self.to_frame().to_html()}"
                f"<small>{notes}</small></div>")

    def plot(self, ax=None, alpha: float = 0.05):
        """Each estimate with its interval, relative to the estimate (percent). Returns the Axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots()
        ci = self.conf_int(alpha)
        p = self.params
        scale = np.where(p.to_numpy() != 0, np.abs(p.to_numpy()), 1.0)
        low = 100 * (ci["lower"].to_numpy() - p.to_numpy()) / scale
        high = 100 * (ci["upper"].to_numpy() - p.to_numpy()) / scale
        y = np.arange(len(p))
        ax.errorbar(np.zeros(len(p)), y, xerr=np.vstack((-low, high)), fmt="o", capsize=3)
        ax.set_yticks(y)
        ax.set_yticklabels(list(p.index))
        ax.axvline(0, color="k", lw=0.8)
        ax.set_xlabel(f"{100 * (1 - alpha):g}% interval relative to the estimate [%]")
        ax.set_title(self._summary_title(), fontsize="small")
        return ax

    # dict ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Every field (JSON-safe), and, for readers, params, bse and the 95 % intervals (not read back)."""
        out = {"model": self.model}
        for f in dataclasses.fields(self):
            if not f.metadata.get("transient"):
                out[f.name] = _encode(getattr(self, f.name))
        ci = self.conf_int()
        out["params"] = json_safe(self.params.to_dict())
        out["bse"] = json_safe(self.bse.to_dict())
        out["conf_int_95"] = json_safe({k: [ci.loc[k, "lower"], ci.loc[k, "upper"]] for k in ci.index})
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "FitResult":
        """The result :meth:`to_dict` wrote (of the class its ``model`` names)."""
        if not isinstance(data, dict) or "model" not in data:
            raise ValueError(f"data must be a dict written by FitResult.to_dict (got {show(data)})")
        target = FitResult._registry.get(data["model"])
        if target is None or not issubclass(target, cls):
            raise ValueError(f"data['model'] must name a {cls.__name__} (one of "
                             f"{sorted(k for k, v in FitResult._registry.items() if issubclass(v, cls))}; "
                             f"got {data['model']!r})")
        if target is not cls:
            return target.from_dict(data)  # the class itself reads it (it may read its own way)
        try:
            values = _reader(target).validate_python(data)
        except ValidationError as exc:
            raise validation_error(exc, data, f"data ({target.model})") from None
        return target(**{name: getattr(values, name) for name in values.model_fields_set})


def _encode(value):
    if isinstance(value, Parameters):
        return json_safe(value.to_dict())
    if isinstance(value, FitResult):
        return value.to_dict()
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.str, "shape": list(value.shape), "data": json_safe(value.ravel().tolist())}
    if isinstance(value, pd.DataFrame):
        return {"columns": list(value.columns), "data": json_safe(value.to_numpy().tolist())}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    return json_safe(value)


def _none_is_nan(value):
    return math.nan if value is None else value


def _array(value) -> np.ndarray:
    if not isinstance(value, dict) or set(value) != {"dtype", "shape", "data"}:
        raise ValueError(f"must be an array written by to_dict ({{dtype, shape, data}}) (got {show(value)})")
    data = [np.nan if v is None else v for v in value["data"]]
    return frozen_array("array", data, np.dtype(value["dtype"])).reshape(value["shape"])


def _frame(value) -> pd.DataFrame:
    if not isinstance(value, dict) or set(value) != {"columns", "data"}:
        raise ValueError(f"must be a table written by to_dict ({{columns, data}}) (got {show(value)})")
    return pd.DataFrame([[np.nan if v is None else v for v in row] for row in value["data"]],
                        columns=value["columns"])


def _parameters(value) -> Parameters:
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise ValueError(f"must be a list of parameters written by to_dict (got {show(value)})")
    return Parameters.from_dict(value)


# How each field type of a result reads from JSON (a float may be null: NaN, as json_safe wrote it).
_READERS = {
    float: Annotated[Optional[float], Strict(), AfterValidator(_none_is_nan)],
    int: Annotated[int, Strict()], bool: Annotated[bool, Strict()], str: Annotated[str, Strict()],
    np.ndarray: Annotated[Any, PlainValidator(_array)], pd.DataFrame: Annotated[Any, PlainValidator(_frame)],
    Parameters: Annotated[Any, PlainValidator(_parameters)],
}


def _annotation(hint):
    """The pydantic annotation that reads a field of type *hint* from what :meth:`FitResult.to_dict` wrote."""
    if hint in _READERS:
        return _READERS[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        kept = [_annotation(a) for a in args if a is not type(None)]
        return Optional[kept[0]] if type(None) in args and len(kept) == 1 else Union[tuple(kept)]
    if origin is tuple:
        return tuple[_annotation(args[0]), ...] if len(args) == 2 and args[1] is Ellipsis else tuple
    if isinstance(hint, type) and issubclass(hint, FitResult):
        return Annotated[Any, PlainValidator(hint.from_dict)]
    return Any


_READER_OF: dict[type, TypeAdapter] = {}


def _reader(cls) -> TypeAdapter:
    """The pydantic model of the fields of result class *cls* in its ``to_dict`` form (the derived keys,
    params, bse, conf_int_95 and model, are not read)."""
    if cls not in _READER_OF:
        hints = typing.get_type_hints(cls)
        fields = {f.name: (_annotation(hints[f.name]), ... if f.default is dataclasses.MISSING
                           and f.default_factory is dataclasses.MISSING else None)
                  for f in dataclasses.fields(cls) if f.init and not f.metadata.get("transient")}
        model = create_model(f"{cls.__name__}Dict", __config__=ConfigDict(extra="ignore",
                                                                       arbitrary_types_allowed=True), **fields)
        _READER_OF[cls] = TypeAdapter(model)
    return _READER_OF[cls]
