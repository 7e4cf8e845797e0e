"""diskmodel.model: the access-time model of a disk and the layers above it.

Pure, vectorised numpy: no I/O, no clocks, no processes. One module per
physical concern, after Djordjevic & Timcenko (2015), section 3.
"""
