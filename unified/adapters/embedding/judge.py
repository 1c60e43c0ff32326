"""The fitted combination of the offline judge: a logistic regression over a few signals,
its coefficients shipped as JSON (``offline_judge.json`` beside this module) and loaded at
run time.

    x_j   = the response's feature j (``signals.FEATURES``)
    c_j   = w_j · (x_j − μ_j) / σ_j            (standardised, so contributions compare)
    z     = b + Σ_j c_j,      p = 1 / (1 + e^(−z))

``p`` is the probability that people call the response faithful, as learned from the
data named in the JSON (``benchmarks/fit_offline_judge.py`` wrote it; the table of
cross-validated AUCs is in ``docs/offline-judge.md``). The Score's value is ``10·p``.

Confidence — how much to trust one verdict, on [0, 1]:

    agreement  a = |Σ_j c_j| / Σ_j |c_j|       (1: every signal pushes the same way;
                                                 0: they cancel out)
    margin     m = 1 − e^(−|z − z*|)            (z* = logit of the pass bound: how far
                                                 the verdict is from flipping)
    confidence   = a · m

``signals_disagree`` is set when the signals pushing towards "faithful" (pro = Σ of the
positive c_j) and towards "unfaithful" (con = −Σ of the negative c_j) are both material
(each ≥ 0.2 logit) and the weaker side reaches half the stronger: such a verdict rests on
which signal the fit trusted more (a sentence copied from the context with one number
swapped: high token precision against an unsupported number), so read the sentences'
details before acting on it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

COEFFICIENTS = Path(__file__).with_name("offline_judge.json")


@dataclass(frozen=True)
class Verdict:
    """One response's fitted probability, its bound and how firm it is."""

    probability: float
    contributions: dict[str, float]
    confidence: float
    signals_disagree: bool

    def details(self) -> dict[str, Any]:
        return {
            "probability": round(self.probability, 4),
            "confidence": round(self.confidence, 4),
            "signals_disagree": self.signals_disagree,
            "contributions": {k: round(v, 4) for k, v in self.contributions.items()},
        }


@dataclass(frozen=True)
class FittedModel:
    """A logistic regression on standardised features (see the module docstring)."""

    name: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    bound: float  # the pass bound on p (0–1): balanced accuracy's best on the fitting data

    @classmethod
    def from_json(cls, name: str, spec: dict[str, Any]) -> "FittedModel":
        n = len(spec["features"])
        if not all(len(spec[k]) == n for k in ("mean", "scale", "coef")):
            raise ValueError(f"{COEFFICIENTS.name}: model '{name}' has mismatched lengths")
        return cls(
            name,
            tuple(spec["features"]),
            tuple(spec["mean"]),
            tuple(spec["scale"]),
            tuple(spec["coef"]),
            float(spec["intercept"]),
            float(spec["bound"]),
        )

    def predict(self, x: dict[str, float]) -> Verdict:
        """The Verdict for one feature dict (every name of ``features`` must be there)."""
        c = {f: w * (x[f] - m) / s for f, w, m, s in zip(self.features, self.coef, self.mean, self.scale)}
        z = self.intercept + sum(c.values())
        p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
        total = sum(abs(v) for v in c.values())
        agreement = abs(sum(c.values())) / total if total else 1.0
        b = min(max(self.bound, 1e-6), 1 - 1e-6)
        margin = 1.0 - math.exp(-abs(z - math.log(b / (1 - b))))
        pro = sum(v for v in c.values() if v > 0)
        con = -sum(v for v in c.values() if v < 0)
        disagree = min(pro, con) >= 0.2 and min(pro, con) >= 0.5 * max(pro, con)
        return Verdict(p, c, agreement * margin, disagree)


@lru_cache(maxsize=None)
def models() -> dict[str, Any]:
    """The fitted models of ``offline_judge.json`` by metric, as written (read once)."""
    return dict(json.loads(COEFFICIENTS.read_text(encoding="utf-8")).get("models", {}))


def fitted_models() -> frozenset[str]:
    """The metrics ``offline_judge.json`` holds a fitted model for."""
    return frozenset(models())


def model_digest(name: str) -> str:
    """sha256 (16 hex digits) of the canonical JSON of model ``name``'s entry in
    ``offline_judge.json``: its features, scaling, coefficients and bound decide every
    value, so a refit is another configuration (a run folder refuses to mix the two)."""
    blob = json.dumps(models().get(name), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=None)
def load(name: str) -> FittedModel:
    """The shipped model ``name`` (``faithfulness``, …) from ``offline_judge.json``."""
    if name not in models():
        raise KeyError(f"{COEFFICIENTS.name} has no model '{name}'")
    return FittedModel.from_json(name, models()[name])
