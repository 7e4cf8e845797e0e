"""diskmodel.data: presets and measurements with their provenance, and readers of DiskSim's files.

Readers and data only: nothing here imports :mod:`diskmodel.model` (the model
may import data, never the reverse).
"""
