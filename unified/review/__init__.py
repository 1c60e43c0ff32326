"""``unified-eval review``: people settle, in the browser, where the backends disagree.

- ``queue``: which sample first (disagreement, then uncertainty) and the filters;
- ``spans``: the answer's unsupported spans a backend reported;
- ``session``: one person's review of one run folder, their labels in ``labels.jsonl``
  (``unified.data.labelfile``);
- ``web``: the Starlette app (token, routes, escaped templates); ``server``: uvicorn on
  127.0.0.1.

Needs the ``review`` extra (starlette, uvicorn, jinja2, python-multipart); nothing here is
imported by a run.
"""
