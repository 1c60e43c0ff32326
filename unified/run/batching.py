"""``--batch`` for one run: its settings, refused before the folder is touched when the run
cannot use a Batch API, and the scope its tasks are scored in (``unified.judge.batch``).

The rules: an online run imports neither the batch module nor the openai client; a batch
run scores on the local executor (this process sends and polls the jobs) with every task
in flight at once, so each step of every sample joins one job; a run none of whose
metrics calls an LLM judge has nothing to batch and runs online, saying so.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable

from unified.run.state import RunState


def batch_settings(state: RunState) -> Any:
    """``BatchSettings`` of a ``--batch`` run, or None for an online run (module docstring)."""
    o = state.opts
    if o.batch is None or o.batch is False:
        return None  # an online run: the batch module (and the openai client) is not imported
    from unified.judge.batch import batch_refusal
    from unified.judge.batch import batch_settings as settings_of

    settings = settings_of(o.batch)
    if settings is None:
        return None
    if o.executor not in (None, "local"):
        raise ValueError("--batch runs on the local executor (this process sends and polls the jobs); drop --executor")
    why = batch_refusal(state.judges)
    if why is not None:
        raise ValueError(why)
    if not any(p.needs_judge for p in state.plan.pairs):
        state.say("note: --batch: no metric of this run calls an LLM judge; nothing to batch")
        return None
    return settings


def batch_scope(state: RunState, news: Callable[[str], None]) -> Any:
    """Batch mode for the tasks of this run (``--batch``), else nothing; ``news``: where a
    job's counts and state are said."""
    if state.batch is None:
        return contextlib.nullcontext()
    from unified.judge.batch import batch_scope as scope

    return scope(state.batch, state.out, news, retry_errors=bool(state.opts.retry_errors))
