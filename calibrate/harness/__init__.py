"""The measurement harness: backends, measurement, device state and the safety of every run."""
