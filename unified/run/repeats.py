"""Test–retest repeats: each judge-using task scored N times with distinct seeds, folded
into the one Score of the task.

What a repeat is:

* Only pairs whose backend asks the chat judge (``Pair.repeats > 1``) are repeated; a
  deterministic or embedding-only metric gives the same number every time and is scored
  once. ``--repeats`` is part of a repeated pair's configuration (``task_config``), so a
  folder scored with another N is refused like any changed configuration (``--fresh``
  starts over): a mean of 3 never mixes with a mean of 5.
* Repeat r of a task runs with seed ``seed_of(r)`` = r (+ the judge's configured seed when
  one is set). The seed goes on every request of the repeat (``task_scope(seed=...)``; the
  judge sends it and the judge cache keys on it), so each repeat is its own cached answer
  and a resumed repeat is free.
* A repeat is a task of its own: its line goes to ``repeats.jsonl`` — the Score plus
  ``repeat`` and ``seed`` — keyed ``(sample_id, metric, backend, repeat)`` and stamped with
  the sample and configuration hashes like any line. When all N repeats of a task are on
  disk, the runner writes the folded Score to ``scores.jsonl`` (one line per task, as
  always). After a kill -9 the next run takes the repeats already on disk (same hashes),
  scores only the missing ones and folds; compaction then drops the repeat lines of every
  folded task. A repeat line is never read as a score: ``scores.jsonl`` only ever holds
  folded lines, so a repeat can neither double a task nor stand in for a stale one.

The fold (``fold``): ``value`` = mean of the repeats that scored; ``passed`` = value ≥
threshold; ``raw`` = mean raw; ``cost`` = the sum; ``details.repeats`` = every repeat
(repeat, seed, value, passed, reason, error, details); ``details.repeat_stats`` =
``unified.analysis.reliability.repeat_summary`` (mean, spread, flip probability,
unstable). A repeat that failed makes the task ``degraded`` (a value from fewer repeats
than asked; ``--retry-errors`` redoes it); every repeat failed: the task failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from unified.analysis.reliability import icc_oneway, repeat_summary
from unified.analysis.stats import Undefined, is_undefined, rounded
from unified.analysis.verdict import default_threshold
from unified.bounds import passed
from unified.run.runfolder import REPEATS_FILE, AppendLog, iter_lines, rewrite_jsonl
from unified.scores import Cost, Score


def seed_of(repeat: int, base: int | None = None) -> int:
    """The seed of repeat ``repeat`` (module docstring)."""
    return repeat + (base or 0)


def stamped(score: Score, repeat: int, seed: int) -> Score:
    """A repeat's Score with its ``repeat`` and ``seed`` in ``details`` (how its line says so)."""
    return score.model_copy(update={"details": {**score.details, "repeat": repeat, "seed": seed}})


def repeat_line(score: Score, repeat: int, seed: int) -> str:
    """The JSON line of one repeat in ``repeats.jsonl``."""
    return stamped(score, repeat, seed).model_dump_json()


def repeat_of(d: Mapping[str, Any]) -> tuple[int, int] | None:
    """(repeat, seed) of a parsed repeat line, or None when it carries none."""
    details = d.get("details")
    if not isinstance(details, dict):
        return None
    r, s = details.get("repeat"), details.get("seed")
    return (r, s) if isinstance(r, int) and isinstance(s, int) else None


def fold(repeats: Sequence[Score], threshold: float | None) -> Score:
    """The task's Score from its N repeat Scores, in repeat order (module docstring)."""
    first = repeats[0]
    entries = [_entry(s) for s in repeats]
    ok = [s for s in repeats if s.ok]
    cost = Cost()
    for s in repeats:
        cost = cost.add(s.cost)
    bound = threshold if threshold is not None else first.threshold
    common: dict[str, Any] = dict(
        cost=cost,
        sample_hash=first.sample_hash,
        config_hash=first.config_hash,
        threshold=bound,
        raw_range=first.raw_range,
        higher_is_better=first.higher_is_better,
    )
    if not ok:
        why = "; ".join(f"repeat {e['repeat']}: {e['error']}" for e in entries)
        return Score.failure(
            first.metric,
            first.backend,
            first.sample_id,
            f"every one of {len(repeats)} repeats failed — {why}"[:2000],
            details={"repeats": entries},
            **common,
        )
    values = [float(s.value) for s in ok]  # type: ignore[arg-type]
    mean = sum(values) / len(values)
    stats = repeat_summary(values, bound if bound is not None else default_threshold(first.metric))
    raws = [s.raw for s in ok if s.raw is not None]
    details = {"repeats": entries, "repeat_stats": stats}
    if why := _degraded_why(repeats, ok):
        details["degraded_reason"] = why
    listed = ", ".join(f"{v:.1f}" for v in values)
    shown = entries[repeats.index(ok[0])]["repeat"]  # the repeat whose reason is shown: the first that scored
    return Score(
        metric=first.metric,
        backend=first.backend,
        sample_id=first.sample_id,
        value=mean,
        raw=sum(raws) / len(raws) if raws else None,
        passed=passed(mean, bound),
        reason=f"mean of {len(ok)} repeats ({listed}); repeat {shown}: {ok[0].reason or ''}".strip(),
        details=details,
        degraded=bool(why),
        **common,
    )


def _degraded_why(repeats: Sequence[Score], ok: Sequence[Score]) -> str:
    """Why a fold is degraded ("" when it is not): repeats that failed, and repeats that
    scored from fewer judges than asked, with their own reason — so the failure list
    groups folds by cause, not by each fold's reason text."""
    parts = []
    if failed := len(repeats) - len(ok):
        parts.append(f"{failed} of {len(repeats)} repeats failed")
    for s in ok:
        if s.degraded:
            inner = (s.details or {}).get("degraded_reason") or "degraded"
            parts.append(f"a repeat scored by fewer judges than asked: {inner}")
            break  # the first cause names the group; the repeats keep every one
    return "; ".join(parts)


def _entry(s: Score) -> dict[str, Any]:
    own = dict(s.details)
    repeat, seed = own.pop("repeat", None), own.pop("seed", None)
    return {
        "repeat": repeat,
        "seed": seed,
        "value": s.value,
        "passed": s.passed,
        "reason": s.reason,
        "error": s.error,
        "degraded": s.degraded,
        "details": own,
    }


TaskKey = tuple[str, str]  # (sample_id, "metric|backend")


class RepeatBook:
    """The repeats of one run: what ``repeats.jsonl`` already holds, what is still to
    score, and the fold when a task's last repeat arrives (module docstring).

    ``pairs``: the run's repeated pairs ({"metric|backend": Pair}). Only repeats whose
    line carries this run's configuration hash and the sample's current hash count."""

    def __init__(self, folder: Path, pairs: Mapping[str, Any]):
        self.path = folder / REPEATS_FILE
        self.pairs = dict(pairs)
        self.n = max((p.repeats for p in self.pairs.values()), default=1)
        # (sample_id, pair) -> sample_hash -> repeat -> Score
        self.held: dict[TaskKey, dict[str, dict[int, Score]]] = {}
        self.log: AppendLog | None = None

    def load(self) -> int:
        """Index the repeat lines on disk (the last line of a repeat wins); returns how many."""
        n = 0
        for d in iter_lines(self.path):
            pair = f"{d.get('metric')}|{d.get('backend')}"
            p, rs = self.pairs.get(pair), repeat_of(d)
            if p is None or rs is None or d.get("config_hash") != p.config_hash or not d.get("sample_hash"):
                continue
            s = Score.model_validate(d)
            self.held.setdefault((s.sample_id, pair), {}).setdefault(str(s.sample_hash), {})[rs[0]] = s
            n += 1
        return n

    def missing(self, sample_id: str, shash: str, pair: Any) -> list[int]:
        """The repeats of (sample, pair) not yet on disk for this sample content."""
        have = self.held.get((sample_id, pair.key), {}).get(shash, {})
        return [r for r in range(pair.repeats) if r not in have]

    def open(self) -> None:
        self.log = AppendLog(self.path)

    def close(self) -> None:
        if self.log is not None:
            self.log.close()

    def record(self, group: Any, scores: Sequence[Score]) -> list[Score]:
        """Write the repeat lines of a scored group; the folded Scores of the tasks whose
        last repeat this was."""
        assert self.log is not None and group.repeat is not None
        folded = []
        for p, s in zip(group.pairs, scores):
            s = stamped(s, group.repeat, group.seed)
            self.log.write(s.model_dump_json())
            have = self.held.setdefault((s.sample_id, p.key), {}).setdefault(group.sample_hash, {})
            have[group.repeat] = s
            done = self.complete(s.sample_id, group.sample_hash, p)
            if done is not None:
                folded.append(done)
        return folded

    def complete(self, sample_id: str, shash: str, pair: Any) -> Score | None:
        """The folded Score of (sample, pair) when all its repeats are held (and forget
        them: the folded line is the task's from now on), else None."""
        by_hash = self.held.get((sample_id, pair.key), {})
        have = by_hash.get(shash, {})
        if len(have) < pair.repeats:
            return None
        self.held.pop((sample_id, pair.key), None)
        return fold([have[r] for r in range(pair.repeats)], pair.task_bound)

    def compact(self, folded: set[TaskKey]) -> int:
        """Rewrite ``repeats.jsonl`` without the lines of folded tasks (their repeats live
        in the folded line's details), of another configuration, or unkeyable; what stays
        is the partial work of an interrupted run. Returns the lines dropped."""

        def keep(_i: int, d: dict[str, Any] | None) -> bool:
            if d is None or repeat_of(d) is None:
                return False
            pair = f"{d.get('metric')}|{d.get('backend')}"
            p = self.pairs.get(pair)
            return (
                p is not None
                and d.get("config_hash") == p.config_hash
                and (str(d.get("sample_id")), pair) not in folded
            )

        return rewrite_jsonl(self.path, keep)


def folded_tasks(scores_path: Path) -> set[TaskKey]:
    """(sample_id, "metric|backend") of every folded line in ``scores.jsonl``."""
    return {
        (str(d["sample_id"]), f"{d['metric']}|{d['backend']}")
        for d in iter_lines(scores_path)
        if isinstance(d.get("details"), dict) and "repeats" in d["details"] and not d.get("row_error")
    }


def retest_summary(lines: Iterable[Score], pairs: Mapping[str, Any], top: int = 20) -> dict[str, Any]:
    """summary.json's ``repeats``: per repeated (metric, backend) the test–retest ICC
    (``unified.analysis.reliability.icc_oneway``, ICC(1,1) and ICC(1,k) over the samples
    with every repeat scored), the share of unstable samples (pass/fail not the same on
    every repeat) and the mean spread over the samples with at least two scored repeats
    (``n_measured``: one scored repeat has no spread and cannot flip; counted, it made a
    flaky judge look stable), and the ``top`` unstable samples by flip probability."""
    rows: dict[str, list[Score]] = {}
    for s in lines:
        key = f"{s.metric}|{s.backend}"
        if key in pairs and s.ok and "repeat_stats" in (s.details or {}):
            rows.setdefault(key, []).append(s)
    out = []
    for key, p in pairs.items():
        got = rows.get(key, [])
        complete = [s for s in got if len(_values(s)) == p.repeats]
        icc = icc_oneway([_values(s) for s in complete])
        measured = [s for s in got if len(_values(s)) >= 2]
        unstable = sorted(
            (s for s in measured if s.details["repeat_stats"]["unstable"]),
            key=lambda s: (-s.details["repeat_stats"]["flip_probability"], s.sample_id),
        )
        spreads = [s.details["repeat_stats"]["spread"] for s in measured]
        metric, _, backend = key.partition("|")
        notes = [f"icc undefined: {getattr(icc['icc1'], 'reason', '')}"] if is_undefined(icc["icc1"]) else []
        if 0 < len(complete) < len(got):
            notes.append(f"ICC over the {len(complete)} of {len(got)} samples with every repeat scored")
        if len(measured) < len(got):
            notes.append(
                f"{len(got) - len(measured)} sample(s) with one scored repeat (the others failed): no spread or "
                "flip to measure; left out of the unstable share and the mean spread"
            )
        none_measured = Undefined("no sample with two scored repeats")
        out.append(
            {
                "metric": metric,
                "backend": backend,
                "k": p.repeats,
                "n": len(got),
                "n_measured": len(measured),
                "icc1": rounded(icc["icc1"]),
                "icc1k": rounded(icc["icc1k"]),
                "icc_samples": len(complete),
                "unstable_share": rounded(len(unstable) / len(measured)) if measured else none_measured,
                "mean_spread": rounded(sum(spreads) / len(spreads)) if spreads else none_measured,
                "unstable": [
                    {
                        "sample_id": s.sample_id,
                        "values": _values(s),
                        "flip_probability": rounded(s.details["repeat_stats"]["flip_probability"]),
                    }
                    for s in unstable[:top]
                ],
                "notes": notes,
            }
        )
    return {
        "repeats": max((p.repeats for p in pairs.values()), default=1),
        "icc_form": "ICC(1,1) one-way random",
        "pairs": out,
    }


def _values(s: Score) -> list[float]:
    return [float(e["value"]) for e in s.details.get("repeats", []) if e.get("value") is not None]


def retest_lines(rt: Mapping[str, Any] | None, show: int = 5) -> list[str]:
    """The terminal's test–retest lines: per pair the ICC and the unstable share, then
    the most unstable samples with their repeats."""
    out = []
    for p in (rt or {}).get("pairs", []):
        share, n = p["unstable_share"], p.get("n_measured", p["n"])  # a summary written before n_measured: n
        unstable = "—" if is_undefined(share) else f"{round(share * n)} of {n} samples unstable"
        spread = p["mean_spread"] if is_undefined(p["mean_spread"]) else f"{p['mean_spread']:.2f}"
        out.append(
            f"test–retest {p['metric']} ({p['backend']}), {p['k']} repeats: ICC(1,1) {_num(p['icc1'])}, "
            f"ICC(1,k) {_num(p['icc1k'])}, mean spread {spread}; {unstable}"
        )
        for u in p["unstable"][:show]:
            out.append(
                f"  unstable {u['sample_id']}: "
                + ", ".join(f"{v:.1f}" for v in u["values"])
                + f" (P(flip) {u['flip_probability']:.2f})"
            )
        out.extend(f"  note: {note}" for note in p.get("notes", []) if not note.startswith("icc undefined"))
    return out


def _num(v: Any) -> str:
    return "undefined" if is_undefined(v) else f"{v:.3f}"
