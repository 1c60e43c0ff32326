"""Reading scores: statistics, agreement between backends and with people, threshold
translation, calibration, the jury, migration reports, gates and run-to-run diffs."""
