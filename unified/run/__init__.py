"""The run path: every (sample, metric, backend) task scored exactly once into a run folder.

``runner.scored_run`` is the door; its parts, one job each: ``options`` (every option),
``runplan`` (which pairs can run and why not), ``state`` (what the parts share),
``source`` (the input, or a copy of a file the run writes), ``prepare`` (the folder made
ready; the no-op rerun check), ``stream`` and ``rowerrors`` (tasks to the executor, lines
to the folder), ``finish`` (the lines made final; the ``RunResult`` of ``result``),
``interrupts`` (Ctrl-C and SIGTERM), ``blocking`` (a run from synchronous code),
``manifest``, ``batching``, ``repeats``; and the folder's own rules: ``runfolder``,
``runindex``, ``columnar``, ``fingerprint``, ``executor``, ``progress``, ``runsummary``."""
