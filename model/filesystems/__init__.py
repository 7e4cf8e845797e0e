"""File systems: the file-system access time of eq. (1) and the cache's service time of eq. (2)
(Djordjevic & Timcenko 2015).

* :mod:`~diskmodel.model.filesystems.filesystem`: a :class:`~diskmodel.model.filesystems.filesystem.FileSystem`
  and the host's page cache, and the access time of a PostMark run on them (eq. 1);
* :mod:`~diskmodel.model.filesystems.terms`: eq. (1)'s terms, each from the I/O it plans;
* :mod:`~diskmodel.model.filesystems.cache`: the cache's service time and hit probability (eq. 2);
* :mod:`~diskmodel.model.filesystems.kinds` and :mod:`~diskmodel.model.filesystems.options`: the kinds of
  file system (ext2/3/4, xfs, btrfs, ...), their defaults and their mkfs and mount options.

The request streams a file system sends to its device are :mod:`diskmodel.model.iopath`'s. This package's
``__init__`` imports nothing, so that importing one of its modules imports no other.
"""
