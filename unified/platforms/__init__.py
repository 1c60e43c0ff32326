"""The places a run can go besides this process and its folder: an MLflow tracking store
(``mlflow_log``: one MLflow run per invocation) and a Ray cluster (``ray_executor``: the
same run's tasks scored on Ray's actors, the driver keeping exactly-once).

They import the run and report layers below them; ``unified.api`` uses them (``mlflow=``),
and the run path finds the Ray executor by name only (``unified.run.executor.NAMED_EXECUTORS``).
A module here may import its tool (mlflow, ray); nothing below this layer does.
"""
