"""The drive: one disk's mechanics and its descriptions, after Djordjevic & Timcenko (2015), section 3.

* :mod:`~diskmodel.model.drive.seek` (eq. 7: ``a + b·√d``, ``c + e·d``, or a measured table),
  :mod:`~diskmodel.model.drive.rotation` (eq. 8) and :mod:`~diskmodel.model.drive.zones` (eq. 6, zoned
  recording);
* :mod:`~diskmodel.model.drive.disk`: a :class:`~diskmodel.model.drive.disk.Disk` and its service time
  (eqs. 3-5), vectorised;
* :mod:`~diskmodel.model.drive.cache`: the drive's buffer (segments, read-ahead, write caching);
* :mod:`~diskmodel.model.drive.parameters`: the one bundle of a drive's numbers the per-request simulation
  (:mod:`diskmodel.model.simulator`) is given;
* :mod:`~diskmodel.model.drive.presets`: the bundled drives by name, and
  :mod:`~diskmodel.model.drive.drives`: the stack's node types that say where a disk comes from (a preset,
  a file, a Disk in memory);
* :mod:`~diskmodel.model.drive.plots`: the seek curve, the zones' rates and a service time's terms, drawn.

The media access request by request (DiskSim's) is :mod:`diskmodel.model.simulator.media_access`: it is
compiled with the rest of the simulator. This package's ``__init__`` imports nothing, so that importing
one of its modules imports no other.
"""
