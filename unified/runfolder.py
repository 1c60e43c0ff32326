"""The run folder: the one set of file names every module uses.

A run folder holds::

    scores.jsonl        one Score a line, appended as tasks finish (exactly one per task)
    samples.jsonl       each sample as read, for the report's drill-down
    summary.json        aggregates, counts, errors, config, timings (written at the end)
    report.html         the self-contained report
    crosscheck.json     agreement between backends (compare)
    run.json            the manifest: each (metric, backend) task configuration, the command
    .lock               held (flock) by the one process writing the folder
"""

from __future__ import annotations

SCORES_FILE = "scores.jsonl"
SAMPLES_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
CROSSCHECK_FILE = "crosscheck.json"
MANIFEST_FILE = "run.json"
LOCK_FILE = ".lock"
CACHE_FILE = "judge_cache.sqlite"
