"""DeepEval objects <-> samples: ``LLMTestCase``, ``Golden``, ``EvaluationDataset``.

In: ``records(obj)`` gives the ``(layout, record)`` pairs ``unified.data.io`` reads in the
``deepeval`` layout: ``input``, ``actual_output``, ``expected_output``,
``retrieval_context``, ``context`` (DeepEval's *ideal* context: our
``reference_contexts``), ``name`` (our id when unique) and the metadata slot
(``LLMTestCase.metadata`` / ``Golden.additional_metadata``); other set fields
(``comments``, ``tools_called``, …) land in metadata. An ``EvaluationDataset`` gives its
test cases, else its goldens. Conversational cases have no single-turn reading: row errors.

Out: ``to_deepeval_test_cases`` builds ``LLMTestCase``s (name = our id, metadata = ours
plus the fields DeepEval has no slot for under ``metadata["unified"]``).
"""

from __future__ import annotations

import contextlib
import io
import logging
from typing import Any, Iterable

from unified.adapters.quiet import quiet_frameworks
from unified.data.convert import export_records
from unified.sample import Sample, SampleError

log = logging.getLogger(__name__)
_CONVERSATIONAL = ("ConversationalTestCase", "ConversationalGolden")


def _case_record(tc: Any) -> tuple[str, dict[str, Any] | str]:
    if type(tc).__name__ in _CONVERSATIONAL:
        return "deepeval", (
            f"a DeepEval {type(tc).__name__} is a conversation, which has no "
            f"single-turn reading; score its turns as LLMTestCases"
        )
    rec = tc.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    # LLMTestCase calls the goldens' `additional_metadata` plain `metadata`
    if "metadata" in rec:
        rec["additional_metadata"] = rec.pop("metadata")
    return "deepeval", rec


def records(obj: Any) -> list[tuple[str, dict[str, Any] | str]]:
    """A dataset (its test cases, else its goldens; one pair each) or one case."""
    if type(obj).__name__ == "EvaluationDataset":
        cases = list(obj.test_cases or []) or list(obj.goldens or [])
        return [_case_record(tc) for tc in cases]
    return [_case_record(obj)]


def to_deepeval_test_cases(samples: Iterable[Sample]) -> list[Any]:
    """``LLMTestCase``s: input, actual_output, expected_output, retrieval_context,
    context (= our reference_contexts), name (= our id) and metadata."""
    quiet_frameworks()
    with contextlib.redirect_stdout(io.StringIO()):  # its read-only notice goes to stdout
        from deepeval.test_case import LLMTestCase

    recs, notes = export_records(samples, "deepeval")
    for n in notes:
        log.warning(n)
    cases = []
    for r in recs:
        r = dict(r)
        meta = r.pop("additional_metadata", None)
        cases.append(LLMTestCase(**r, metadata=meta))
    return cases


def from_deepeval_test_cases(cases: Iterable[Any]) -> list[Sample]:
    """Samples from ``LLMTestCase``s or ``Golden``s. Strict: raises ``SampleError``
    naming the row and field of the first bad case (``unified.data.io.read_samples(cases)``
    skips bad rows instead)."""
    from unified.data.io import load_samples

    good, bad = load_samples(list(cases))
    if bad:
        raise SampleError(bad[0].field, f"row {bad[0].row}: {bad[0].reason}")
    return good
