"""Where our metrics meet other tools' test and evaluation runners: DeepEval, RAGAS, MLflow
and Phoenix metrics and scorers (``scoring`` scores one Sample through ``unified.api`` for
them) and the pytest plugin. A module here may import its tool; nothing else in
``unified`` imports these modules."""
