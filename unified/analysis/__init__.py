"""Reading scores: statistics, agreement between backends and with people, threshold
translation, calibration, the jury, migration reports, gates, and what changed between two
configurations. Nothing here imports the run or report layers: callers hand over the
scores, or a Report-like object (``calibrated.ScoredRun``)."""
