"""Where unified-rag-eval meets other tools: the pytest plugin, MLflow, Ray, and the
frameworks' own test runners. A module here may import its tool; nothing else in
``unified`` imports these modules except through a hook it is given."""
