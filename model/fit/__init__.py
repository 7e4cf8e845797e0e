"""Fitting: every fitter of the model, apart from the model (astropy.modeling / lmfit style)."""
