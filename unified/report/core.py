"""``Report``: a run's results as tables, files, the frameworks' shapes and an HTML page.

A Report reads a run folder lazily: the score lines are read once into the report model
(``unified.report.model``; last line per task key wins) and every summary, table and the
page come from it, so a 100k-sample run is summarised without holding its Scores. It can
also wrap Scores held in memory.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from unified.data.files import atomic_path, write_text
from unified.redact import one_line
from unified.report import frameworks
from unified.report.model import (
    FileSource,
    MemorySource,
    ParquetSource,
    RunModel,
    ScoreSource,
    build_model,
    iter_jsonl,
    order_model,
    unlisted_note,
    unreadable_note,
)
from unified.run.columnar import fresh_parquet
from unified.run.runfolder import PARQUET_FILE, SAMPLES_FILE, SCORES_FILE, SUMMARY_FILE
from unified.run.runindex import file_stat
from unified.scores import Aggregate, Score

log = logging.getLogger(__name__)


def _run_folder(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not (p / SCORES_FILE).exists():
        raise FileNotFoundError(f"{p} is not a run folder: it has no {SCORES_FILE}")
    return p


def _same_lines(old: Any, new: Any) -> bool:
    """Two ``Report._stamp`` values of a folder whose scores file is unchanged."""
    return isinstance(old, tuple) and isinstance(new, tuple) and old[0] == new[0]


class Report:
    """The results of a run: ``Report.from_dir(DIR)`` (or ``Report(DIR)``) or ``Report(scores, samples)``."""

    def __init__(
        self,
        scores: Iterable[Score] | None = None,
        samples: Iterable[Any] | Mapping[str, Any] | None = None,
        *,
        run_dir: str | Path | None = None,
    ):
        if isinstance(scores, (str, os.PathLike)):  # Report("runs/x"): a run folder, not scores
            if run_dir is not None or samples is not None:
                raise TypeError("Report(path) reads a run folder; give scores and samples, or a path alone")
            scores, run_dir = None, _run_folder(scores)
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self._scores = list(scores) if scores is not None else None
        self._samples_in = samples
        self._model: tuple[Any, RunModel] | None = None
        self._source: ScoreSource | None = None  # what self._model was read from
        # people's labels from a labels file (use_labels): sample id -> {metric: label}
        self._people: dict[str, dict[str, int | float]] = {}
        # True when the run that returned this Report had nothing to do and wrote nothing
        # (unified.run.runindex: the folder proved it holds every task already)
        self.unchanged = False

    @classmethod
    def from_dir(cls, path: str | Path) -> "Report":
        return cls(run_dir=_run_folder(path))

    # ------------------------------------------------------------ the model

    def source(self) -> ScoreSource:
        """Where the score lines are read from: the source the current model was built
        from (its positions are that source's: byte offsets or row numbers); else the
        Scores in memory; else the folder's ``scores.parquet`` while its fingerprint
        matches ``scores.jsonl`` as it is now (``unified.run.columnar``), else the lines."""
        if self._model is not None and self._source is not None and self._model[0] == self._stamp():
            return self._source
        if self._scores is not None:
            return MemorySource(self._scores)
        assert self.run_dir is not None
        meta = fresh_parquet(self.run_dir)
        if meta is not None:
            return ParquetSource(self.run_dir / PARQUET_FILE, meta)
        return FileSource(self.run_dir / SCORES_FILE)

    def _stamp(self) -> Any:
        """What invalidates the cached model: the scores file's stat (``runindex.file_stat``:
        a same-size rewrite within one mtime tick still changes the ctime or inode), and the
        summary's mtime (it names the metrics in the order asked)."""
        if self._scores is not None:
            return len(self._scores)
        assert self.run_dir is not None
        summary = self.run_dir / SUMMARY_FILE
        stat = file_stat(self.run_dir / SCORES_FILE)
        if stat is None:  # as before: a folder whose scores file is gone is an error, not an empty run
            raise FileNotFoundError(f"{self.run_dir / SCORES_FILE} is gone")
        return (tuple(stat), summary.stat().st_mtime_ns if summary.exists() else None)

    def model(self) -> RunModel:
        """The report model (one pass over the score lines; cached until the file changes)."""
        stamp = self._stamp()
        if self._model is not None and self._model[0] != stamp and _same_lines(self._model[0], stamp):
            # only summary.json changed (the run's end writes it): reorder, read no line again
            self._model = (stamp, order_model(self._model[1], self.run_summary()))
        if self._model is None or self._model[0] != stamp:
            self._model, self._source = None, None
            source = self.source()
            try:
                model = build_model(source, self.run_summary())
            except Exception as exc:
                if not isinstance(source, ParquetSource):
                    raise
                # a damaged copy (page checksum) or one removed by a run mid-read: the lines
                # are the source of truth, and the copy is only ever a faster way to them
                log.debug("scores.parquet unreadable (%s): reading scores.jsonl", one_line(exc, 200))
                assert self.run_dir is not None  # a ParquetSource only comes from a folder
                source = FileSource(self.run_dir / SCORES_FILE)
                model = build_model(source, self.run_summary())
            self._model, self._source = (stamp, model), source
            if model.unreadable:
                warnings.warn(unreadable_note(model.unreadable, self.run_dir), stacklevel=2)
        return self._model[1]

    # ------------------------------------------------------------ access

    def iter_score_dicts(self) -> Iterator[dict[str, Any]]:
        """Each task's score line as a dict, the last line per task key (CONTRACTS.md),
        in the order the lines were written."""
        model = self.model()
        keep = None if model.superseded == 0 else model.positions()
        for pos, d in self.source().lines():
            if keep is None or pos in keep:
                yield d

    def iter_score_fields(self, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
        """``iter_score_dicts`` with at least the task key and ``fields`` of each line
        (a ``scores.parquet`` copy reads only those columns): the same tasks, the same
        last-line rule, the same 0–10 rule."""
        model = self.model()
        keep = None if model.superseded == 0 else model.positions()
        for pos, d in self.source().field_lines(fields):
            if keep is None or pos in keep:
                yield d

    def iter_scores(self) -> Iterator[Score]:
        for d in self.iter_score_dicts():
            yield Score.model_validate(d)

    @property
    def scores(self) -> list[Score]:
        """All Scores (loads them; prefer ``iter_scores``/``summary`` for huge runs)."""
        return list(self.iter_scores())

    def iter_samples(self) -> Iterator[dict[str, Any]]:
        """Each sample as a dict, in run order (``samples.jsonl`` for a run folder)."""
        src = self._samples_in
        if src is None and self.run_dir is not None:
            yield from (d for d in iter_jsonl(self.run_dir / SAMPLES_FILE) if "id" in d)
            return
        items = [] if src is None else (src.values() if isinstance(src, Mapping) else src)
        for s in items:
            d = s.model_dump(exclude_none=True) if hasattr(s, "model_dump") else dict(s)  # type: ignore[arg-type]
            d["id"] = str(d.get("id"))
            yield d

    def samples_of(self, scored: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Sample id -> the sample as a dict, for a table of the ``scored`` sample ids;
        warns (once per call) when some have no sample: a ``samples.jsonl`` deleted, cut
        or edited since the run, or samples given that miss some scores' ids. Their
        question, answer and contexts would otherwise be empty, or their rows missing,
        without a word."""
        by_id = {d["id"]: d for d in self.iter_samples()}
        missing = [sid for sid in dict.fromkeys(scored) if sid not in by_id]
        if missing:
            warnings.warn(unlisted_note(len(missing), missing[0], self.run_dir), stacklevel=3)
        return by_id

    def samples_given(self) -> Any:
        """The samples this Report was given in memory (None: it reads its folder's)."""
        return self._samples_in

    def samples(self, ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Sample id -> the sample as a dict; only ``ids`` when given."""
        want = None if ids is None else set(ids)
        return {d["id"]: d for d in self.iter_samples() if want is None or d["id"] in want}

    def run_summary(self) -> dict[str, Any]:
        if self.run_dir is not None and (self.run_dir / SUMMARY_FILE).exists():
            return json.loads((self.run_dir / SUMMARY_FILE).read_text(encoding="utf-8"))
        return {}

    def backends(self) -> list[str]:
        """Backends in the run's order (as asked, then as first seen)."""
        return list(self.model().backends)

    def metrics(self) -> list[str]:
        """Metrics in the one stable order: as asked, then registry order."""
        return list(self.model().metrics)

    # ------------------------------------------------------------ tables

    def to_pandas(self, samples: bool = False) -> Any:
        """One row per task: metric, backend, sample_id, value, raw, raw_lo, raw_hi,
        higher_is_better, threshold, passed, reason, error, degraded, row (the 1-based
        position of the input row), input_index (a DataFrame input's index label), row_error,
        details (dict), calibrated (the ``--calibration`` map's 0–10 value, None where none
        applied), cost_* columns. Join back to a DataFrame input with
        ``df.join(report.to_pandas().set_index("input_index"))``. ``samples=True`` adds the sample's ``user_input``,
        ``response`` and ``reference`` (None for input-row errors)."""
        import pandas as pd

        keys = (
            "metric",
            "backend",
            "sample_id",
            "value",
            "raw",
            "higher_is_better",
            "threshold",
            "passed",
            "reason",
            "error",
            "degraded",
            "row",
            "input_index",
        )
        cols = [
            "metric",
            "backend",
            "sample_id",
            "value",
            "raw",
            "raw_lo",
            "raw_hi",
            "higher_is_better",
            "threshold",
            "passed",
            "reason",
            "error",
            "degraded",
            "row",
            "input_index",
            "row_error",
            "details",
            "calibrated",
        ]
        rows = []
        for d in self.iter_score_dicts():
            rr = d.get("raw_range") or (None, None)
            row = {k: d.get(k) for k in keys}
            row["raw_lo"], row["raw_hi"] = rr[0], rr[1]
            row["row_error"] = bool(d.get("row_error"))
            row["details"] = d.get("details") or {}
            row["calibrated"] = d.get("calibrated")  # 0–10 by a --calibration map; None where none applied
            for k, v in (d.get("cost") or {}).items():
                row[f"cost_{k}"] = v
            rows.append(row)
        df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=cols)
        if rows:
            df = self._stable_order(df)
        if samples:
            df = self._join_samples(df)
        return df

    def _stable_order(self, df: Any) -> Any:
        """Rows in one order whatever order the tasks finished in: samples as read (input
        rows that never became samples last), then the one metric order, then backend."""
        from unified.report.model import metric_order

        position = {d["id"]: i for i, d in enumerate(self.iter_samples())}
        metric_rank = {m: i for i, m in enumerate(metric_order(list(dict.fromkeys(df["metric"]))))}
        keys = df.assign(
            _s=[
                len(position) if r else position.get(sid, len(position))
                for sid, r in zip(df["sample_id"], df["row_error"])
            ],
            _m=df["metric"].map(metric_rank),
        )
        return (
            keys.sort_values(["_s", "sample_id", "_m", "backend"], kind="stable")
            .drop(columns=["_s", "_m"])
            .reset_index(drop=True)
        )

    def _join_samples(self, df: Any) -> Any:
        fields = ("user_input", "response", "reference")
        by_id = self.samples_of(sid for sid, row_err in zip(df["sample_id"], df["row_error"]) if not row_err)
        for f in fields:
            df[f] = [
                None if row_err else by_id.get(sid, {}).get(f) for sid, row_err in zip(df["sample_id"], df["row_error"])
            ]
        return df

    def wide(self, values: str = "value") -> Any:
        """Samples × ``backend:metric`` pivot of ``values`` (input-row errors left out):
        one row per sample and one column per (backend, metric) the folder holds, a failed
        task NaN — a sample that failed every task, and a pair that failed on every
        sample, are rows and columns of NaN, never left out (pandas' ``dropna`` default
        dropped both without a word)."""
        df = self.to_pandas()
        if df.empty:
            return df
        df = df[~df["row_error"]]
        df = df.assign(column=df["backend"] + ":" + df["metric"])
        return df.pivot_table(index="sample_id", columns="column", values=values, aggfunc="last", dropna=False)

    def summary(self, stable: bool = False) -> list[Aggregate]:
        """One Aggregate per (metric, backend) (``RunningAggregates`` over the last line of
        each task), in the order the run first wrote them — the runner's order — or, with
        ``stable=True``, in the page's order (metrics as asked, then registry order).

        A finished folder answers from its ``index.json`` while ``scores.jsonl`` is the file
        the index describes (``unified.run.runindex``): no line is read."""
        if self._model is None and self._scores is None and self.run_dir is not None:
            from unified.run.runindex import stored_aggregates

            stored = stored_aggregates(self.run_dir, self.run_dir / SCORES_FILE, stable)
            if stored is not None:
                return [Aggregate.model_validate(a) for a in stored]
        return self.model().aggregates(stable=stable)

    def stored_view(self) -> tuple[int, int, int, int, list[str], list[str]] | None:
        """(samples, tasks, failed, degraded, metrics, backends) from ``index.json`` and
        ``summary.json`` when the index still describes ``scores.jsonl`` and the lines have
        not been read yet; None otherwise."""
        if self._model is not None or self._scores is not None or self.run_dir is None:
            return None
        from unified.run.runindex import stored_aggregates

        stored = stored_aggregates(self.run_dir, self.run_dir / SCORES_FILE, True)
        written = self.run_summary()
        if stored is None or not written:
            return None
        aggs = [Aggregate.model_validate(a) for a in stored]
        return (
            int((written.get("counts") or {}).get("rows_scored") or 0),
            sum(a.count for a in aggs),
            sum(a.errors for a in aggs),
            int(written.get("n_degraded") or 0),
            list(dict.fromkeys(a.metric for a in aggs)),
            list(dict.fromkeys(a.backend for a in aggs)),
        )

    def error_list(self, limit: int = 50) -> list[dict[str, Any]]:
        """The first ``limit`` failed tasks: sample id, metric, backend, error."""
        out = []
        for d in self.model().failed():
            out.append({k: d[k] for k in ("sample_id", "metric", "backend", "error")})
            if len(out) >= limit:
                break
        return out

    def error_groups(self) -> list[dict[str, Any]]:
        """Failed tasks grouped by cause (``unified.analysis.errorgroups.group_errors``)."""
        from unified.analysis.errorgroups import group_errors

        return self._placed(group_errors(self.model().failed()))

    def degraded_groups(self) -> list[dict[str, Any]]:
        """Degraded tasks (a value from fewer judges than asked) grouped by cause, as
        ``error_groups`` groups failures."""
        from unified.analysis.errorgroups import group_errors

        return self._placed(group_errors(self.model().degraded()))

    def _placed(self, groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each group's example with its input ``row`` and ``sample_hash``, read from its own
        line (the model keeps neither): the end of a run names the file and row, not a hash.
        One fetch for all the examples; ``pos`` is dropped (it means nothing outside)."""
        examples = [g["example"] for g in groups]
        wanted = [ex["pos"] for ex in examples if ex.get("pos") is not None]
        lines = self.source().fetch(wanted) if wanted else {}
        for ex in examples:
            d = lines.get(ex.pop("pos", None)) or {}
            ex["row"] = ex.get("row") if ex.get("row") is not None else d.get("row")
            ex["sample_hash"] = ex.get("sample_hash") or d.get("sample_hash")
        return groups

    def degraded_counts(self) -> dict[tuple[str, str], int]:
        """(metric, backend) -> its degraded tasks; gates count them with the failed ones."""
        counts: dict[tuple[str, str], int] = {}
        for d in self.model().degraded():
            counts[(d["metric"], d["backend"])] = counts.get((d["metric"], d["backend"]), 0) + 1
        return counts

    def to_jsonl(self, path: str | Path) -> Path:
        p = Path(path)
        with atomic_path(p) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for d in self.iter_score_dicts():
                f.write(json.dumps(d, ensure_ascii=False) + "\n")
        return p

    def to_parquet(self, path: str | Path) -> Path:
        """Parquet of ``to_pandas()``; ``details`` is stored as a JSON string because its
        keys differ between metrics (Parquet needs one struct type per column)."""
        df = self.to_pandas()
        if not df.empty:
            df["details"] = df["details"].map(lambda d: json.dumps(d, ensure_ascii=False, default=str))
        with atomic_path(path) as tmp:
            df.to_parquet(tmp, index=False)
        return Path(path)

    # ------------------------------------------------------------ the frameworks' shapes

    def _framework_input(self, backend: str | None) -> tuple[Any, list[str], list[str]]:
        if backend is not None and backend not in self.backends():
            raise ValueError(f"backend '{backend}' is not in this run (it has: {', '.join(self.backends())})")
        by_task, seen = frameworks.collect(self.iter_score_dicts(), backend)
        order = [b for b in self.backends() if b in seen]
        return by_task, order, self.metrics()

    def to_ragas(self, backend: str | None = None) -> Any:
        """The DataFrame a RAGAS user gets from ``ragas.evaluate(...).to_pandas()``:
        ``user_input``, ``retrieved_contexts``, ``response``, ``reference``, then one
        column per metric under its RAGAS name holding the raw 0–1 value (NaN when the
        task failed; see ``unified.report.frameworks``). One row per sample in run order;
        in a run with several backends and no ``backend=``, one row per (sample, backend)
        with a ``backend`` column."""
        import pandas as pd

        by_task, order, metrics = self._framework_input(backend)
        with_backend = backend is None and len(self.backends()) > 1
        samples = self.samples_of(sid for sid, _ in by_task).values()
        rows, cols = frameworks.ragas_rows(samples, by_task, order, metrics, with_backend)
        return pd.DataFrame(rows, columns=cols)

    def to_deepeval(self, backend: str | None = None) -> list[dict[str, Any]]:
        """Per sample, DeepEval's test-result shape: ``name`` (the sample id), ``input``,
        ``actual_output``, ``expected_output``, ``retrieval_context``, ``success`` and
        ``metrics_data``, a list of ``{name, score, threshold, success, reason, error}``
        (score and threshold raw, on 0–1). In a run with several backends and no
        ``backend=``, one record per (sample, backend) with a ``backend`` field."""
        by_task, order, metrics = self._framework_input(backend)
        with_backend = backend is None and len(self.backends()) > 1
        out = []
        for s in self.samples_of(sid for sid, _ in by_task).values():
            for b in order:
                lines = by_task.get((s["id"], b))
                if lines is not None:
                    out.append(frameworks.deepeval_record(s, lines, metrics, b if with_backend else None))
        return out

    # ------------------------------------------------------------ cross-check and page

    def crosscheck(
        self, top_n: int = 10, on: str = "value", label_cuts: Mapping[str, float] | None = None
    ) -> dict[str, Any] | None:
        """``unified.analysis.crosscheck.crosscheck`` over this run's sample tasks (input-row errors
        are no sample), or None with fewer than 2 backends. ``on="calibrated"``: on the
        values a ``--calibration`` file mapped (``Score.calibrated``). ``label_cuts``:
        {metric: the label from which people pass} for graded labels (``--label-cut``)."""
        if len(self.backends()) < 2:
            return None
        from unified.analysis.crosscheck import crosscheck

        scores = (s for s in self.iter_scores() if not s.row_error)
        return crosscheck(scores, self.sample_objects(), top_n=top_n, on=on, label_cuts=label_cuts)

    def sample_objects(self) -> dict[str, Any]:
        """Sample id -> ``Sample``; a sample that no longer validates (written by an older
        version) is left out: it only loses its question in the cross-check's tables.
        People's labels read by ``use_labels`` are in each sample's ``metadata.labels``."""
        out = self._validated_samples()
        for sid, mine in self._people.items():
            s = out.get(sid)
            if s is not None:
                labels = s.metadata.get("labels")
                own = dict(labels) if isinstance(labels, Mapping) else {}
                out[sid] = s.model_copy(update={"metadata": {**s.metadata, "labels": {**own, **mine}}})
        return out

    def _validated_samples(self) -> dict[str, Any]:
        from unified.sample import Sample

        out = {}
        for sid, d in self.samples().items():
            try:
                out[sid] = Sample.model_validate(d)
            except Exception:
                continue
        return out

    def use_labels(self, history: Any) -> list[str]:
        """Take people's labels from a labels file (``unified.data.labelfile``: its
        ``LabelHistory``) into the samples' ``metadata.labels``, where the cross-check and
        ``calibrate`` read labels; a label the file holds replaces the sample's own label
        of the same metric (the file is the later decision). Returns what was left out,
        as notes: stale labels, ties between people, unreadable lines, labels of samples
        this run does not hold."""
        from unified.data.labelfile import people_labels

        samples = self._validated_samples()
        people = people_labels(history, {sid: s.content_hash() for sid, s in samples.items()})
        foreign = [sid for sid in people.labels if sid not in samples]
        self._people = {sid: mine for sid, mine in people.labels.items() if sid in samples}
        notes = list(people.notes)
        if foreign:
            notes.append(f"{len(foreign)} labelled sample(s) (first: '{foreign[0]}') are not in this run: left out")
        return notes

    def write_html(self, path: str | Path, *, max_drilldown: int = 200) -> Path:
        """Write the self-contained HTML report (``unified.report.html``)."""
        from unified.report.html import render_html

        return write_text(path, render_html(self, max_drilldown=max_drilldown))

    # ------------------------------------------------------------ notebook

    def __repr__(self) -> str:
        from unified.report.notebook import report_repr

        return report_repr(self)

    def _repr_html_(self) -> str:
        from unified.report.notebook import report_html

        return report_html(self)
