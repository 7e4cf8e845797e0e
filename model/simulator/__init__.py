"""The per-request drive simulation after DiskSim 4.0's disk model, request by request.

* :mod:`~diskmodel.model.simulator.simulate`: :func:`simulate_requests` on a whole trace, and the
  rules of DiskSim it follows;
* :mod:`~diskmodel.model.simulator.session`: :class:`DriveSession`, the same simulation stepped, its
  state kept between calls;
* :mod:`~diskmodel.model.simulator.inputs`: what the kernel is given (the checked requests, the
  drive's numbers, the working arrays, the carried record);
* :mod:`~diskmodel.model.simulator.state`: the names of every slot of the kernel's arrays;
* :mod:`~diskmodel.model.simulator.kernel`: the request loop (numba);
* the DiskSim emulation it calls, one module per part of DiskSim's disk: the block layout
  (:mod:`~diskmodel.model.simulator.mapping`, :mod:`~diskmodel.model.simulator.g2`,
  :mod:`~diskmodel.model.simulator.g4`), the media access
  (:mod:`~diskmodel.model.simulator.media_access`, :mod:`~diskmodel.model.simulator.access_block`),
  the buffer's segments (:mod:`~diskmodel.model.simulator.segments`,
  :mod:`~diskmodel.model.simulator.nocache`), the read-ahead
  (:mod:`~diskmodel.model.simulator.readahead`, :mod:`~diskmodel.model.simulator.immediate`,
  :mod:`~diskmodel.model.simulator.read_direct`), requests larger than a segment
  (:mod:`~diskmodel.model.simulator.big_transfer`) and the queue of prebuffered writes
  (:mod:`~diskmodel.model.simulator.writequeue`).

Pure model code: no I/O and no clocks. This package imports nothing on its own, so importing one of
its modules does not import the kernel.
"""
