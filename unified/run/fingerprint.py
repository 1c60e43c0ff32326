"""Fingerprints: a score belongs to the sample content and the configuration that made it.

Two hashes travel on every score line (``Score.sample_hash``, ``Score.config_hash``):

* ``sample_hash(sample)`` — ``Sample.content_hash()``: sha256 of the canonical JSON of
  everything a metric may read, every Sample field except ``metadata`` (labels and free
  notes never change a score) and ``id`` (the id is the line's key, not its content),
  first 16 hex digits.
* ``config_hash(config)`` — sha256 of the canonical JSON of ``task_config(...)``: the
  backend, the metric as the user wrote it (canonical name, cutoff, bracket parameters),
  the backend's own settings that decide the answer (a framework's version), and — only
  when the (backend, metric) pair uses them — the judges that answer it (models, sampling
  settings, single/dual judge, structured-output mode) and the embedding model.

A deterministic metric (``precision@3``) therefore keeps its scores when the judge
changes; ``faithfulness`` does not. A judge is its endpoint (the URL without credentials
or query but a model-choosing parameter, ``unified.redact.endpoint_of``), model and sampling: model names are often
placeholders ("local"), so another server is another judge, as in the judge cache's
keys. Keys and a URL's credentials are never part of a fingerprint (it is written to disk).

On resume a task counts as done only when its line carries both hashes of this run;
``unified.analysis.configdiff.diff_configs`` names what changed when a configuration differs.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from unified.metrics import MetricRef
from unified.sample import Sample


def _digest(obj: Any) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sample_hash(sample: Sample) -> str:
    """Fingerprint of what a metric can read of ``sample`` (module docstring): the one
    content hash, ``Sample.content_hash`` (the same that names a sample given no id)."""
    return sample.content_hash()


def text_hash(text: str) -> str:
    """Fingerprint of a row error's text: a row that fails differently is written again."""
    return _digest(text)


def judge_requirements(backend: Any, ref: MetricRef) -> frozenset[str]:
    """What ``backend`` needs from the Judges for ``ref``: a subset of {"chat", "embedder"}.

    The backend says so itself (``Backend.requirements``); a backend that does not is
    judged by the metric's kind: an LLM metric needs the chat judge, an embedding metric
    the embedder, a deterministic one nothing."""
    own = getattr(backend, "requirements", None)
    if callable(own):
        return frozenset(own(ref))
    if not getattr(backend, "uses_judges", True):
        return frozenset()
    return {"llm": frozenset({"chat"}), "embedding": frozenset({"embedder"})}.get(ref.spec.kind, frozenset())


def describe_judges(judges: Any) -> dict[str, Any]:
    """The secret-free description of what decides the judges' answers
    (``Judges.describe()``: ``judge``, ``judge2``, ``single_judge``, ``embedder``)."""
    own = getattr(judges, "describe", None)
    if callable(own):
        return dict(own())
    return {"judge": None, "judge2": None, "single_judge": False, "embedder": None}


def task_config(backend: Any, ref: MetricRef, judges: Any) -> dict[str, Any]:
    """Everything that decides the Score of (``backend``, ``ref``) besides the sample."""
    cfg: dict[str, Any] = {
        "backend": backend.name,
        "metric": ref.canonical,
        "k": ref.k,
        "params": {k: v for k, v in ref.params},
    }
    needs = judge_requirements(backend, ref)
    extra = getattr(backend, "fingerprint_extra", None)
    if callable(extra):
        settings = extra()
        if "chat" not in needs and isinstance(settings, dict) and "prompts" in settings:
            # a prompt version decides only what a chat judge answers: precision@3 keeps
            # its scores (and the configuration hash of folders written before it existed)
            settings = {k: v for k, v in settings.items() if k != "prompts"}
        cfg["backend_settings"] = settings
    per_metric = getattr(backend, "fingerprint_for", None)  # what decides this metric's values alone
    more = per_metric(ref) if callable(per_metric) else None
    if isinstance(more, dict) and more:
        cfg["backend_settings"] = {**(cfg.get("backend_settings") or {}), **more}
    if needs:
        desc = describe_judges(judges)
        if "chat" in needs:
            cfg["judge"] = desc.get("judge")
            cfg["judge2"] = desc.get("judge2")
            cfg["single_judge"] = desc.get("single_judge", False)
        if "embedder" in needs:
            cfg["embedder"] = desc.get("embedder")
    return cfg


def config_hash(config: Mapping[str, Any]) -> str:
    return _digest(config)
