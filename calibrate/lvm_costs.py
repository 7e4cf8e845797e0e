"""The LVM mapping costs of eq. (12) that the main job fits, as a JSON file.

``diskmodel experiment`` fits, per LVM layout, the mapping costs
``md_mapping_s`` and ``fb_mapping_s`` of eq. (12) (Djordjevic & Timcenko
2015) on the paper's Tables 4-6 (:func:`diskmodel.model.fit.paper.fit_paper`),
and writes them to ``lvm_costs.json`` in its report folder
(:func:`costs_to_json`). ``diskmodel predict --costs FILE`` reads such a file
(:func:`read_costs`); ``predict --fitted`` reads the one shipped with the
package, ``diskmodel/data/lvm_costs_paper.json`` (:func:`fitted_costs`),
which is the ``lvm_costs.json`` of a default ``diskmodel experiment`` run
(see its ``provenance`` key).

These costs are the paper's per-layout form, fitted to its tables: they
reproduce the tables, not device-mapper.  Device-mapper's own cost, a
measured cost per bio times the bios the I/O path sends it, is
:mod:`diskmodel.model.stacks.dm_cost`; docs/benchmarks.md (the
``djordjevic_loo.py`` section) compares the two.

The file::

    {"format": "diskmodel.lvm-costs", "format_version": 1,
     "provenance": "...", "disk": "...", "fitted_on": ["test1", "test2", "test3"],
     "layouts": {"lvm1": {"md_mapping_s": ..., "fb_mapping_s": ...}, "lvm2": {...}},
     "bse": {"lvm1": {...}, "lvm2": {...}},
     "io_path": {"file_data_rate_bytes_per_s": ..., "cpu_per_file_operation_s": ...}}

``layouts`` holds the costs [s]; ``io_path`` the I/O-path parameters
fitted with them on the native cells (``IO_PARAMETER_BOUNDS`` of
:mod:`diskmodel.model.fit.postmark`): the costs were fitted on top of that
path, so they are used with it (:class:`FittedCosts`). ``bse`` (the fit's
standard errors, NaN written as null), ``provenance``, ``disk`` and
``fitted_on`` are for the reader. The file is read with a pydantic v2 model
of these keys (:func:`costs_from_dict`); a file that breaks it raises
:class:`CostsFileError` naming the file and the key.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from importlib import resources

from pydantic import ConfigDict, ValidationError, create_model

from diskmodel.calibrate.harness.calibration_schema import (NONNEGATIVE, SECONDS, TEXT, _Object, _object,
                                                           first_error)
from diskmodel.calibrate.harness.outputs import parse_input_json, read_input_bytes

FORMAT = "diskmodel.lvm-costs"
FORMAT_VERSION = 1
#: The layouts that have mapping costs (native has none: it maps nothing).
LVM_LAYOUTS = ("lvm1", "lvm2")
#: The costs of eq. (12) a file gives per layout [s].
COST_KEYS = ("md_mapping_s", "fb_mapping_s")
#: The shipped file of ``predict --fitted``, in :mod:`diskmodel.data`.
FITTED_FILE = "lvm_costs_paper.json"
# A costs file is a few hundred bytes; anything much larger is not one.
_MAX_FILE_BYTES = 1 << 20


class CostsFileError(ValueError):
    """A costs JSON that cannot be used; the message names the file and the key."""

    def __init__(self, source: str, message: str):
        super().__init__(f"{source}: {message}")
        self.source = source


@dataclass(frozen=True)
class FittedCosts:
    """A costs file read: ``mappings`` {"native", "lvm1", "lvm2": LvmMapping} and the fitted ``io_path``."""

    mappings: dict
    io_path: dict
    provenance: str


def _finite(value) -> float | None:
    """A finite float, or None for NaN (JSON has no NaN)."""
    value = float(value)
    return value if math.isfinite(value) else None


def costs_to_dict(fit, *, provenance: str) -> dict:
    """The costs file of a :class:`~diskmodel.model.fit.paper.PaperFit` (the main job's fit)."""
    layouts, bse = {}, {}
    for name in LVM_LAYOUTS:
        params, errors = fit.lvm_fits[name].params, fit.lvm_fits[name].bse
        layouts[name] = {key: float(params[key]) for key in COST_KEYS}
        bse[name] = {key: _finite(errors[key]) for key in COST_KEYS}
    io_path = {} if fit.io_fit is None else {k: float(v) for k, v in fit.io_fit.params.items()}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "provenance": provenance,
            "disk": str(getattr(fit.disk, "name", fit.disk)), "fitted_on": list(fit.train_tests),
            "layouts": layouts, "bse": bse, "io_path": io_path}


def costs_to_json(fit, *, provenance: str) -> str:
    return json.dumps(costs_to_dict(fit, provenance=provenance), indent=1, allow_nan=False) + "\n"


_READER = None


def _reader():
    """The pydantic model of a costs file's keys (built on first use: the I/O-path bounds come from the fit)."""
    global _READER
    if _READER is None:
        from diskmodel.model.fit import IO_PARAMETER_BOUNDS

        layout = create_model("LayoutCosts", __base__=_Object, **{key: (SECONDS.field(), ...) for key in COST_KEYS})
        io_path = create_model("IoPath", __config__=ConfigDict(extra="forbid"),
                               **{key: (NONNEGATIVE.field(), None) for key in IO_PARAMETER_BOUNDS})
        layouts = create_model("Layouts", __base__=_Object, **{name: (_object(layout), ...) for name in LVM_LAYOUTS})
        _READER = create_model("CostsFile", __base__=_Object, layouts=(_object(layouts), ...),
                               io_path=(_object(io_path), None), provenance=(TEXT.or_null(), None))
    return _READER


def costs_from_dict(data, source: str = "costs") -> FittedCosts:
    """The :class:`FittedCosts` of a costs file's object, checked by its pydantic model (the file and the
    key named on error; an ``io_path`` key that is not an I/O-path parameter is an unknown field)."""
    from diskmodel.model.stacks.lvm_mapping import LvmMapping

    if not isinstance(data, dict):
        raise CostsFileError(source, f"must hold one JSON object (got {type(data).__name__}); give the "
                                     f"lvm_costs.json that `diskmodel experiment` writes")
    if data.get("format") != FORMAT:
        raise CostsFileError(source, f"key 'format' must be {FORMAT!r} (got {data.get('format')!r}): this is not "
                                     f"an lvm_costs.json that `diskmodel experiment` writes")
    version = data.get("format_version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise CostsFileError(source, f"key 'format_version' must be {FORMAT_VERSION} (got {version!r})")
    try:
        _reader().model_validate(data)
    except ValidationError as exc:
        key, problem = first_error(exc)
        if key.startswith("io_path.") and exc.errors()[0]["type"] == "extra_forbidden":
            from diskmodel.model.fit import IO_PARAMETER_BOUNDS

            problem = f"is not an I/O-path parameter (known: {', '.join(IO_PARAMETER_BOUNDS)})"
        raise CostsFileError(source, f"key '{key}' {problem}") from None
    mappings = {"native": LvmMapping()}
    for name in LVM_LAYOUTS:
        mappings[name] = LvmMapping(**{key: float(data["layouts"][name][key]) for key in COST_KEYS})
    io_path = data.get("io_path") or {}
    provenance = data.get("provenance") or ""
    return FittedCosts(mappings, {k: float(v) for k, v in io_path.items()}, provenance)


def read_costs(path) -> FittedCosts:
    """The :class:`FittedCosts` of a costs file (:func:`costs_from_dict`); OSError if it cannot be read."""
    source = os.fspath(path)
    raw = read_input_bytes(source, what="a costs JSON file", max_bytes=_MAX_FILE_BYTES, error=CostsFileError,
                           hint="give the lvm_costs.json that `diskmodel experiment` writes in its report folder")
    return _parse(raw, source)


def _parse(raw: bytes, source: str) -> FittedCosts:
    return costs_from_dict(parse_input_json(raw, source, what="a costs file", error=CostsFileError), source)


def fitted_costs() -> FittedCosts:
    """The costs shipped with the package: the main job's fit on the paper (``predict --fitted``)."""
    data_file = resources.files("diskmodel.data").joinpath(FITTED_FILE)
    return _parse(data_file.read_bytes(), f"diskmodel/data/{FITTED_FILE}")
