"""Human-labelled RAG data for ``meta_eval.py``: one in-domain set and the unseen sets.

None of this data is in the repository. ``find_sets(root)`` reads a folder laid out like
the project's shared data folder:

- in-domain: ``ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl`` (ARES,
  111 Databricks rows; the embedding backend's parameters were tuned on its TUNE half).
  Rows are split into a TUNE and a TEST half by the parity of the first byte of
  sha256(row id): stable across runs and machines, independent of row order.
- unseen (never used for tuning; each is optional):
  ``interop/ares/nq_few_shot_prompt_for_judge_scoring.tsv`` and ``…/fever_…tsv`` (ARES
  few-shot rows, 7 each, labels ``[[Yes]]``/``[[No]]`` for context relevance, answer
  relevance and faithfulness); ``interop/trulens/context_relevance_golden_set.json`` and
  ``answer_relevance_golden_set.json`` (TruLens, 15 and 17 rows, a graded human
  ``expected_score`` in 0–1, taken as relevant when ≥ 0.5); and
  ``interop/dingo/hallucination_test.jsonl`` (Dingo, 3 rows, no label column: rows 1 and
  3 are its deliberate hallucinations, a wrong year and an invented eighth continent,
  row 2 the faithful control — labels 0, 1, 0 by the file's own design).

``load_labelled(path)`` reads any JSONL whose rows hold a sample (any framework's field
names) and a ``labels`` object; a label given as a list holds one vote per annotator.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Iterator

from unified.sample import Sample, SampleError

ARES_IN_DOMAIN = "ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl"
LABEL_TO_METRIC = {
    "faithfulness": "faithfulness",
    "context_relevance": "context_relevancy",
    "answer_relevance": "answer_relevancy",
    "context_relevancy": "context_relevancy",
    "answer_relevancy": "answer_relevancy",
}
_TSV_LABELS = {
    "Context_Relevance_Label": "context_relevancy",
    "Answer_Relevance_Label": "answer_relevancy",
    "Answer_Faithfulness_Label": "faithfulness",
}
_DINGO_LABELS = {"1": 0, "2": 1, "3": 0}  # see the module docstring
GRADED_CUT = 0.5  # a TruLens expected_score ≥ this counts as relevant


class LabelledRow:
    """A sample, its first annotator's binary labels by canonical metric, a second
    annotator's where given, and its group: ``tune``/``test`` for the in-domain set's
    halves, else the unseen set's name."""

    def __init__(
        self, sample: Sample, labels: dict[str, int], second: dict[str, int] | None = None, group: str | None = None
    ):
        self.sample, self.labels, self.second = sample, labels, second or {}
        self.group = group or half_of(sample.id)

    @property
    def half(self) -> str:
        return self.group


def half_of(row_id: str) -> str:
    return "tune" if hashlib.sha256(row_id.encode()).digest()[0] % 2 == 0 else "test"


def _votes(raw_labels: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    for name, v in (raw_labels or {}).items():
        metric = LABEL_TO_METRIC.get(name)
        if metric is None or v is None:
            continue
        votes = v if isinstance(v, list) else [v]
        first[metric] = int(votes[0])
        if len(votes) > 1 and votes[1] is not None:
            second[metric] = int(votes[1])
    return first, second


def load_labelled(path: Path, group: str | None = None) -> list[LabelledRow]:
    """Rows with a ``labels`` object; a bad row is reported on one line (file:line: why)
    and skipped. ``group`` None: split into tune/test halves by the row id."""
    rows: list[LabelledRow] = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                raw_labels = rec.pop("labels")
                sample = Sample.from_record(rec, warn_unknown=False)
            except (ValueError, KeyError, SampleError) as e:
                print(f"{path}:{n}: skipped: {e}", file=sys.stderr)
                continue
            if not sample.id or sample.id == sample.content_hash():
                sample.id = f"{path.stem}:{n}"
            rows.append(LabelledRow(sample, *_votes(raw_labels), group=group))
    return rows


def load_ares_tsv(path: Path, group: str) -> list[LabelledRow]:
    """ARES few-shot TSV: Query → user_input, Document → the one retrieved context,
    Answer → response; ``[[Yes]]`` = 1, ``[[No]]`` = 0 (anything else: unlabelled)."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for n, rec in enumerate(csv.DictReader(f, delimiter="\t"), start=2):
            labels = {
                m: int(v == "[[Yes]]")
                for col, m in _TSV_LABELS.items()
                if (v := (rec.get(col) or "").strip()) in ("[[Yes]]", "[[No]]")
            }
            sample = Sample(
                id=f"{group}:{n}", user_input=rec["Query"], response=rec["Answer"], retrieved_contexts=[rec["Document"]]
            )
            rows.append(LabelledRow(sample, labels, group=group))
    return rows


def load_trulens(path: Path, metric: str, group: str) -> list[LabelledRow]:
    """TruLens golden set: ``query``, ``expected_response`` (a passage for context
    relevance, an answer for answer relevance), ``expected_score`` in 0–1."""
    rows = []
    for n, rec in enumerate(json.loads(path.read_text(encoding="utf-8")), start=1):
        text = rec["expected_response"]
        fields = {"retrieved_contexts": [text]} if metric == "context_relevancy" else {"response": text}
        sample = Sample(id=f"{group}:{path.stem}:{n}", user_input=rec["query"], **fields)
        rows.append(LabelledRow(sample, {metric: int(float(rec["expected_score"]) >= GRADED_CUT)}, group=group))
    return rows


def load_dingo_hallucination(path: Path, group: str) -> list[LabelledRow]:
    """Dingo's hallucination test rows (``prompt``, ``content``, ``context``), labelled by
    the file's design (see the module docstring)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            sample = Sample(
                id=f"{group}:{rec['data_id']}",
                user_input=rec["prompt"],
                response=rec["content"],
                retrieved_contexts=list(rec["context"]),
            )
            rows.append(LabelledRow(sample, {"faithfulness": _DINGO_LABELS[str(rec["data_id"])]}, group=group))
    return rows


def _unseen(root: Path) -> Iterator[tuple[Path, Any]]:
    i = root / "interop"
    yield i / "ares/nq_few_shot_prompt_for_judge_scoring.tsv", lambda p: load_ares_tsv(p, "nq")
    yield i / "ares/fever_few_shot_prompt_for_judge_scoring.tsv", lambda p: load_ares_tsv(p, "fever")
    yield (i / "trulens/context_relevance_golden_set.json", lambda p: load_trulens(p, "context_relevancy", "trulens"))
    yield (i / "trulens/answer_relevance_golden_set.json", lambda p: load_trulens(p, "answer_relevancy", "trulens"))
    yield i / "dingo/hallucination_test.jsonl", lambda p: load_dingo_hallucination(p, "dingo")


def find_sets(root: Path) -> tuple[list[LabelledRow], list[str]]:
    """All rows under the shared-data folder ``root`` (in-domain halves first, then the
    unseen sets in a fixed order) and the files read. Missing files are skipped."""
    rows: list[LabelledRow] = []
    read: list[str] = []
    if (root / ARES_IN_DOMAIN).exists():
        rows += load_labelled(root / ARES_IN_DOMAIN)
        read.append(ARES_IN_DOMAIN)
    for path, loader in _unseen(root):
        if path.exists():
            rows += loader(path)
            read.append(str(path.relative_to(root)))
    return rows, read
