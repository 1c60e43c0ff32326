"""``run.json``, the run folder's manifest, as one invocation records itself in it.

The rule: the manifest is written before the first score line (``running: true``) and
again when the run ends; it keeps every task configuration by hash (this run's added to
the earlier ones), one entry per invocation (its start, redacted command, seconds, how it
ended), the jury, the price tables the folder's lines were priced under, and what the
attempts ``--retry-errors`` dropped had cost — so no figure a resumed folder reports
depends on a run that is gone.
"""

from __future__ import annotations

import time
from typing import Any

from unified.run.state import RunState


def write_manifest(state: RunState, manifest: dict[str, Any], running: bool) -> None:
    """``run.json`` from what it held (``manifest``) and this invocation."""
    from unified.redact import redact_argv, redact_config

    configs = {
        **manifest.get("configs", {}),
        **{p.config_hash: redact_config(state.plan.configs[p.key]) for p in state.plan.pairs},
    }
    runs = list(manifest.get("invocations", []))
    entry = {
        "started": state.started,
        "command": redact_argv(state.opts.command or []),
        "seconds": round(time.monotonic() - state.t0, 3),
        "interrupted": state.stop.interrupted,
        "running": running,
    }
    if runs and runs[-1].get("started") == state.started:
        runs[-1] = entry
    else:
        runs.append(entry)
    jury = state.jury_method or state.opts.jury or manifest.get("jury")
    tables = price_tables(state, manifest)
    state.folder.write_manifest(
        {
            "version": 1,
            "configs": configs,
            "pairs": state.plan.hashes,
            "invocations": runs,
            **({"jury": jury} if jury else {}),
            **({"price_tables": tables} if tables else {}),
            **({"retried_spend": manifest["retried_spend"]} if manifest.get("retried_spend") else {}),
        }
    )


def price_tables(state: RunState, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The price tables the folder's lines were priced under: the manifest's, and this
    run's when it scored a task (a line's ``usd`` is fixed when it is written, so a
    changed ``--price`` leaves earlier lines at the old prices)."""
    tables = [t for t in manifest.get("price_tables") or [] if isinstance(t, dict)]
    mine = state.prices()
    if mine and state.counts.tasks_run and (table := {m: list(v) for m, v in sorted(mine.items())}) not in tables:
        tables.append(table)
    return tables
