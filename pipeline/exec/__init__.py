"""Where work runs: the local and Ray executors, the workers they run, the device and training precision, and
progress bars."""
