"""diskmodel.calibrate: everything that touches devices, files, processes, VMs and time."""
