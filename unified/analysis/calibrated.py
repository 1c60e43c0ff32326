"""``calibration.json``: a calibrated scale fitted on one run's human labels, and its use on
later runs (``unified-eval calibrate``, ``run/compare --calibration``).

Fit (``fit_run``): per (metric, backend) of a run folder whose samples carry labels for
the metric (``metadata.labels``, binarised as ``unified.analysis.calibration`` does), the
isotonic map from the 0–10 value to the share of people who pass
(``unified.analysis.isotonic``), with its cross-validated Brier score beside that of
value/10. The jury is not fitted: its configuration is its members' lines, different on
every sample.

The file records, per entry: ``metric``, ``backend``, ``config_hash`` and the redacted
``config`` (from the run's manifest: backend, metric, judge endpoint, model, sampling,
framework version, repeats), ``labelled`` (n), ``positives``, ``labels_fingerprint``
(sha256 of the sorted (sample hash, label) pairs: which labelled set it was fitted on),
``fitted_on`` (the sorted sample hashes of that set: a later run's labelled rows among
them are in-sample, ``in_sample_notes``), ``label``, ``binarised_at`` (graded labels),
``map`` ({"x", "y"}) and ``cv``.

Use (``Calibration.check`` then ``apply``): a map belongs to the configuration that
produced the values it was fitted on. A run whose (metric, backend) is in the file under
another configuration hash is refused, naming what changed; a file none of whose entries
is a pair of the run is refused. Pairs of the run the file does not cover get no
``calibrated`` value (said once). On a covered Score that scored:

    calibrated = 10 · interp(value, x, y)        (0–10, monotone in value)
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

import numpy as np

from unified.analysis.calibration import people_pass
from unified.analysis.configdiff import diff_configs
from unified.analysis.isotonic import cross_validated, isotonic_fit, isotonic_predict
from unified.analysis.jury import JURY
from unified.analysis.stats import MIN_N, rounded
from unified.analysis.verdict import cut_for
from unified.scores import Score


class ScoredRun(Protocol):
    """What a fit reads of a run (a ``unified.report.Report`` of a folder): its Scores, its
    samples and the folder whose ``run.json`` records each configuration."""

    run_dir: Path | None

    def iter_scores(self) -> Iterator[Score]: ...

    def sample_objects(self) -> dict[str, Any]: ...


VERSION = 1


class CalibrationError(ValueError):
    """A calibration file that does not fit the run (or is not a calibration file)."""


def _fingerprint(pairs: Iterable[tuple[str, float]]) -> str:
    blob = json.dumps(sorted(pairs), separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def fit_entry(
    metric: str,
    backend: str,
    scores: Mapping[str, Score],
    passed: Mapping[str, float],
    config: Mapping[str, Any] | None,
) -> dict[str, Any] | str:
    """One (metric, backend) entry of the file, or why it cannot be fitted."""
    ids = _labelled(scores, passed)
    hashes = {s.config_hash for sid, s in scores.items() if sid in ids}
    if len(ids) < MIN_N:
        return f"{len(ids)} labelled sample(s) scored < {MIN_N}"
    if len(hashes) != 1 or None in hashes:
        return "its scores carry no single configuration fingerprint"
    # rounded as the file stores the map, before the fit: two values that round to one
    # would otherwise be two points of one x, a map ``entry_problem`` refuses
    x = np.round(np.array([float(scores[sid].value) for sid in ids]), 6)  # type: ignore[arg-type]
    y = np.array([passed[sid] for sid in ids])
    if len(np.unique(y)) < 2:
        return "the labels of its samples hold a single verdict: nothing to map"
    xs, ys = isotonic_fit(x, y)
    return {
        "metric": metric,
        "backend": backend,
        "config_hash": hashes.pop(),
        "config": dict(config or {}),
        "labelled": len(ids),
        "positives": int(y.sum()),
        "labels_fingerprint": _labels_fingerprint(scores, passed, ids),
        "fitted_on": sorted({str(scores[sid].sample_hash) for sid in ids}),
        "map": {"x": rounded(xs, 6), "y": rounded(ys, 6)},
        "cv": {k: rounded(v) for k, v in cross_validated(x, y).items()},
    }


def fit_run(report: ScoredRun, label_cuts: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The calibration file's content for a run folder's Report (module docstring);
    ``label_cuts``: {metric: cut} for graded labels (``--label-cut``)."""
    run_dir = report.run_dir
    if run_dir is None:
        raise ValueError("a calibration is fitted on a run folder; this Report has none")
    samples = report.sample_objects()
    manifest = _read(Path(run_dir) / "run.json")
    configs = manifest.get("configs") or {}
    entries, notes = [], []
    for (metric, backend), scores in _scores_by_pair(report).items():
        key, passed, cut = people_pass(metric, samples, cut_for(metric, label_cuts))
        if not passed:
            # a cut that cannot be told says why
            why = f" ({getattr(cut, 'reason', cut)})" if isinstance(cut, str) else ""
            notes.append(f"{metric} ({backend}): no usable human labels for it in the run{why}")
            continue
        h = next((s.config_hash for s in scores.values() if s.config_hash), None)
        got = fit_entry(metric, backend, scores, passed, configs.get(h) if h else None)
        if isinstance(got, str):
            notes.append(f"{metric} ({backend}): not fitted — {got}")
            continue
        got.update(label=key, **({"binarised_at": cut} if cut is not None else {}))
        entries.append(got)
    return {
        "version": VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": str(run_dir),
        "entries": entries,
        "notes": notes,
    }


def in_sample_notes(path: str | Path, report: ScoredRun, label_cuts: Mapping[str, float] | None = None) -> list[str]:
    """One note per pair of ``report`` some of whose labelled, scored samples were in the
    set its map in ``path`` was fitted on (the entry's ``fitted_on`` sample hashes; a file
    written before them: its ``labels_fingerprint``, the whole set alone): the agreement
    with people on those calibrated values is in-sample (an isotonic map fitted on these
    labels shows an ECE near 0 on them), not evidence of calibration."""
    cal = Calibration.load(path)
    samples = report.sample_objects()
    table = _scores_by_pair(report)
    notes = []
    for key, e in cal.entries.items():
        metric, backend = key.split("|", 1)
        scores = table.get((metric, backend), {})
        _, passed, _ = people_pass(metric, samples, cut_for(metric, label_cuts))
        ids = _labelled(scores, passed)
        seen = _in_fit(e, scores, passed, ids)
        if seen:
            share = "in-sample" if seen == len(ids) else "partly in-sample"
            notes.append(
                f"{_names([key])[0]}: {seen} of the {len(ids)} labelled samples here were in the fit of its "
                f"calibration map: the agreement on calibrated values is {share}; measure it on other labelled rows"
            )
    return notes


def _in_fit(e: Mapping[str, Any], scores: Mapping[str, Score], passed: Mapping[str, float], ids: list[str]) -> int:
    """How many of ``ids`` (labelled, scored samples) entry ``e``'s map was fitted on."""
    fitted = e.get("fitted_on")
    if isinstance(fitted, list):
        known = set(map(str, fitted))
        return sum(str(scores[sid].sample_hash) in known for sid in ids)
    same = bool(ids) and _labels_fingerprint(scores, passed, ids) == e.get("labels_fingerprint")
    return len(ids) if same else 0


def _scores_by_pair(report: ScoredRun) -> dict[tuple[str, str], dict[str, Score]]:
    """(metric, backend) -> sample id -> Score, of the report's sample tasks; no jury
    lines (the jury is never fitted: its configuration is its members' lines)."""
    table: dict[tuple[str, str], dict[str, Score]] = {}
    for s in report.iter_scores():
        if not s.row_error and s.backend != JURY:
            table.setdefault((s.metric, s.backend), {})[s.sample_id] = s
    return table


def _labelled(scores: Mapping[str, Score], passed: Mapping[str, float]) -> list[str]:
    """The samples a map is fitted on: scored without error and labelled, sorted."""
    return sorted(sid for sid, s in scores.items() if s.ok and sid in passed)


def _labels_fingerprint(scores: Mapping[str, Score], passed: Mapping[str, float], ids: list[str]) -> str:
    """``labels_fingerprint``: which labelled set (sample hash, verdict) a map saw."""
    return _fingerprint((str(scores[sid].sample_hash), passed[sid]) for sid in ids)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class Calibration:
    """A loaded ``calibration.json`` (module docstring)."""

    def __init__(self, data: Mapping[str, Any], path: str = "calibration.json"):
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        for i, e in enumerate(data.get("entries", []), start=1):
            problem = entry_problem(e)
            key = f"{e.get('metric')}|{e.get('backend')}" if isinstance(e, dict) else "?"
            if problem is None and key in self.entries:  # two files merged: the last would win silently
                problem = f"a second entry for {_names([key])[0]}"
            if problem is not None:
                raise CalibrationError(
                    f"{path}: entry {i}: {problem}; write the file again with: unified-eval calibrate RUN_DIR"
                )
            self.entries[key] = e
        self.active: dict[str, dict[str, Any]] = {}

    @classmethod
    def load(cls, path: str | Path) -> "Calibration":
        p = Path(path)
        if not p.exists():
            raise CalibrationError(f"{p} does not exist")
        data = _read(p)
        if data.get("version") != VERSION or not isinstance(data.get("entries"), list):
            raise CalibrationError(f"{p} is not a calibration file (write one with: unified-eval calibrate RUN_DIR)")
        return cls(data, str(p))

    def check(self, hashes: Mapping[str, str], configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Refuse a file fitted under another configuration (``CalibrationError`` naming
        what changed) or covering none of the run's pairs; keep the entries to apply and
        return one note per pair of the run the file does not cover."""
        covered = [k for k in hashes if k in self.entries]
        if not covered:
            raise CalibrationError(
                f"{self.path} calibrates {', '.join(_names(self.entries)) or 'nothing'}; this run "
                f"scores {', '.join(_names(hashes))}: none of them"
            )
        for k in covered:
            e = self.entries[k]
            if e["config_hash"] != hashes[k]:
                what = diff_configs(e.get("config") or {}, configs.get(k) or {}) or ["configuration"]
                raise CalibrationError(
                    f"{self.path} was fitted on {_names([k])[0]} under another configuration "
                    f"({'; '.join(what[:4])}): fit it again on a labelled run of this one"
                )
            self.active[k] = e
        notes = [f"{_names([k])[0]}: not in {self.path}, no calibrated value" for k in hashes if k not in self.entries]
        return notes + [n for k in covered if (n := _weak_map(k, self.entries[k])) is not None]

    def apply(self, d: dict[str, Any]) -> dict[str, Any]:
        """A score line with ``calibrated`` set when its pair is calibrated and it scored."""
        e = self.active.get(f"{d.get('metric')}|{d.get('backend')}")
        if e is None or d.get("value") is None or d.get("error") or d.get("config_hash") != e["config_hash"]:
            return uncalibrated(d)  # a value left from another file would pass for this one's
        if d.get("degraded"):  # fewer judges or repeats than the values the map was fitted on
            return uncalibrated(d)
        p = float(isotonic_predict(e["map"]["x"], e["map"]["y"], float(d["value"])))
        return {**d, "calibrated": round(10.0 * p, 6)}


def entry_problem(e: Any) -> str | None:
    """Why ``e`` is no usable entry of a calibration file, or None. The map must be what
    ``fit_entry`` writes: x strictly increasing on 0–10, y non-decreasing on 0–1, both
    finite and of one length — ``np.interp`` answers anything else without a word (a
    y of 0–5 gave calibrated values of 46 on the 0–10 scale, a NaN wrote NaN into the
    lines, unsorted x a map that is not monotone)."""
    if not isinstance(e, dict):
        return f"not an object ({type(e).__name__})"
    for key in ("metric", "backend", "config_hash"):
        if not isinstance(e.get(key), str) or not e[key]:
            return f"'{key}' must be a non-empty string"
    m = e.get("map")
    x, y = (m.get("x"), m.get("y")) if isinstance(m, dict) else (None, None)
    if not isinstance(x, list) or not isinstance(y, list) or not x or len(x) != len(y):
        return '\'map\' must be {"x": [...], "y": [...]}, two lists of one length (at least one point)'
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in x + y):
        return "'map' holds a value that is not a finite number"
    if any(b <= a for a, b in zip(x, x[1:])) or x[0] < 0 or x[-1] > 10:
        return "'map.x' must increase strictly within 0–10 (the values it maps)"
    if any(b < a for a, b in zip(y, y[1:])) or y[0] < 0 or y[-1] > 1:
        return "'map.y' must not decrease and must lie within 0–1 (shares of people who pass)"
    fitted = e.get("fitted_on", [])
    if not isinstance(fitted, list) or not all(isinstance(h, str) for h in fitted):
        return "'fitted_on' must be a list of sample hashes (strings)"
    return None


def _weak_map(key: str, e: Mapping[str, Any]) -> str | None:
    """A note for a map used as asked though its fit said not to trust it: not better
    than value/10 in cross-validation, or too few labels to cross-validate."""
    cv: Mapping[str, Any] = e["cv"] if isinstance(e.get("cv"), Mapping) else {}
    cal, raw = cv.get("brier_calibrated"), cv.get("brier_raw")
    if not isinstance(cal, (int, float)) or not isinstance(raw, (int, float)):
        return (
            f"{_names([key])[0]}: its map could not be cross-validated ({e.get('labelled')} labelled): its "
            "calibrated values are used as asked, unchecked"
        )
    if cal >= raw:
        return (
            f"{_names([key])[0]}: its map is not better than value/10 in cross-validation (Brier {cal:.4f} vs "
            f"{raw:.4f}): its calibrated values are used as asked"
        )
    return None


def uncalibrated(d: dict[str, Any]) -> dict[str, Any]:
    """A score line without ``calibrated``: a resumed folder's lines may hold values
    mapped by a file this run did not name (or by an entry it no longer has); kept, they
    would mix with this run's and feed the cross-check "on calibrated values"."""
    if d.get("calibrated") is None:
        return d
    return {k: v for k, v in d.items() if k != "calibrated"}


def _names(keys: Iterable[str]) -> list[str]:
    return [f"{k.split('|', 1)[0]} ({k.split('|', 1)[1]})" for k in keys]


def describe_fit(data: Mapping[str, Any]) -> list[str]:
    """The lines ``calibrate`` prints: per entry n, positives and the cross-validated
    Brier of the map against value/10; then the notes."""
    lines = []
    for e in data["entries"]:
        cv = e["cv"]
        cal, raw = cv["brier_calibrated"], cv["brier_raw"]
        verdict = (
            ""
            if isinstance(cal, str) or isinstance(raw, str)
            else "  (better than value/10)"
            if cal < raw
            else "  (NOT better than value/10: do not use it)"
        )
        lines.append(
            f"{e['metric']} ({e['backend']}): {e['labelled']} labelled, {e['positives']} pass; "
            f"{cv['folds']}-fold cross-validated Brier {_f(cal)} vs value/10 {_f(raw)}{verdict}"
        )
    return lines + [f"note: {n}" for n in data.get("notes", [])]


def _f(v: Any) -> str:
    return v if isinstance(v, str) else f"{v:.4f}"
