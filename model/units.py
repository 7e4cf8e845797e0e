"""Units of size, defined once [bytes].

Binary multiples (KiB, MiB, GiB, TiB) are what block devices, LVM and
PostMark count in; decimal ones (GB) are what drive makers print on the label.
"""
KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40
GB = 10**9
