"""The storage stack: one description of a stack (a file system on volumes, partitions and disks), its node
kinds and its block layers.

* :mod:`~diskmodel.model.stacks.stack`: :class:`~diskmodel.model.stacks.stack.Stack`, its explicit list of
  node types (``NODE_TYPES``) and the paper's stacks;
* :mod:`~diskmodel.model.stacks.nodes` (node types keyed by ``kind``), :mod:`~diskmodel.model.stacks.schema`
  (their JSON schema, pydantic v2) and :mod:`~diskmodel.model.stacks.stack_schema` (the field reference);
* the block layers: :mod:`~diskmodel.model.stacks.block` (what every block node answers),
  :mod:`~diskmodel.model.stacks.volumes` (partitions, linear and striped LVM volumes, eqs. 10-12),
  :mod:`~diskmodel.model.stacks.volume_on_disk`, :mod:`~diskmodel.model.stacks.raid`,
  :mod:`~diskmodel.model.stacks.thin`, :mod:`~diskmodel.model.stacks.loop_file` and
  :mod:`~diskmodel.model.stacks.network` (NBD, NFS).

A stack's I/O path as request streams is :mod:`diskmodel.model.iopath`. Node kinds are listed, not
registered: importing a module registers nothing. This package's ``__init__`` imports nothing, so that
importing one of its modules imports no other.
"""
