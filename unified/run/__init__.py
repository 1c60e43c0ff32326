"""The run path: options, the plan, the run folder and its fingerprints, executors, progress,
the summary, and ``evaluate()`` that wires them (``runner``)."""
