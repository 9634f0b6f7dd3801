"""Finished runs: `sealed` reads one as the run left it (for every reader of a finished run), and `release` is the
gate between two (compare-runs: is B worse than A?)."""
