"""diskmodel.data: presets and measurements with their provenance."""
