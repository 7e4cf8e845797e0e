"""DiskSim 4.0's drives as model objects: what the records of a drive's files mean for the model.

* :mod:`~diskmodel.model.disksim_drives.convert`: a drive folder's records as a
  :class:`~diskmodel.model.drive.disk.Disk` (seek, zones, cache) and as the per-request simulation's
  :class:`~diskmodel.model.drive.parameters.DriveParameters`, and a drive checked against its trace;
* :mod:`~diskmodel.model.disksim_drives.honoured`: which of DiskSim's parameters the simulation honours,
  and the errors for those it does not.

The files are read by :mod:`diskmodel.data.disksim` (readers and data only, which imports no model code);
the simulation itself is :mod:`diskmodel.model.simulator`. This package's ``__init__`` imports nothing,
so that importing one of its modules imports no other.
"""
