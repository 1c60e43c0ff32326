"""Scripted answers of the loopback judge for the framework-integration tests — plumbing,
never evidence of judgment quality.

``grounding_judge(body)`` answers every structured request with the server's synthesised
answer (a pure function of the request), then:

* a request whose text mentions ``zebra`` gets every verdict negative (``not_found``,
  ``no``, 0) — an ungrounded answer, faithfulness 0;
* one that mentions ``brokenjudge`` gets text that is not JSON — the judge fails, the
  task errors;
* one that mentions ``ragasfail`` gets text that is not JSON when it is a RAGAS prompt
  (its schemas are named ``...Output``), a normal answer otherwise — one jury member fails;
* every other verdict is positive (``supported``, ``yes``, 1) — faithfulness 10.

Integer verdicts become 1 (not 2): RAGAS's NLI verdicts are 0/1 and a 2 would put its
faithfulness outside [0, 1].
"""

from __future__ import annotations

import json
import random
from typing import Any

from judge_server import _seed_for, _text_of, request_schema, synthesize

NOT_JSON = "I am not JSON at all"


def _verdicts(value: Any, bad: bool) -> Any:
    if isinstance(value, dict):
        return {k: _verdicts(v, bad) for k, v in value.items()}
    if isinstance(value, list):
        return [_verdicts(v, bad) for v in value]
    if value in ("supported", "contradicted", "not_found"):
        return "not_found" if bad else "supported"
    if value in ("yes", "no", "idk", "borderline"):
        return "no" if bad else "yes"
    if isinstance(value, int) and not isinstance(value, bool):
        return 0 if bad else 1
    return value


def _is_ragas(schema: dict) -> bool:
    return str(schema.get("title", "")).endswith("Output") or "ragas" in json.dumps(schema).lower()


def grounding_judge(body: dict) -> Any:
    """The scripted answer for one chat request (module docstring); None: synthesise."""
    schema, _mode = request_schema(body)
    if schema is None:
        return None
    text = _text_of(body).lower()
    if "brokenjudge" in text or ("ragasfail" in text and _is_ragas(schema)):
        return NOT_JSON
    return _verdicts(synthesize(schema, random.Random(_seed_for(text, 0))), "zebra" in text)
