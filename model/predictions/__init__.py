"""What predictions are made of: workloads, results objects, what-if tables and the check against measured
service times. The entry point, :func:`diskmodel.model.predict.predict`, is the module
:mod:`diskmodel.model.predict`.

* :mod:`~diskmodel.model.predictions.workload` (PostMark 1.5, in expectation) with
  :mod:`~diskmodel.model.predictions.postmark_population`; :mod:`~diskmodel.model.predictions.block_workloads`
  (fio jobs, a file copy) and :mod:`~diskmodel.model.predictions.fio_job` (fio's job files);
* :mod:`~diskmodel.model.predictions.results`: a prediction from the timed I/O path, as a results object;
* :mod:`~diskmodel.model.predictions.scenarios`: tables of predictions over layouts, locations and stripe
  widths;
* :mod:`~diskmodel.model.predictions.validation`: predicted against measured service times, the demerit
  (Ruemmler & Wilkes 1994; DiskSim's validation).

This package's ``__init__`` imports nothing, so that importing one of its modules imports no other.
"""
