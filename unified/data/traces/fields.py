"""Ids and times as trace sources write them, made comparable.

* Trace and span ids: OTLP/JSON writes lowercase hex (the OTLP spec), protobuf's generic
  JSON mapping base64 (``MessageToJson``), the OpenTelemetry SDK's console exporter
  ``0x``-prefixed hex. All become lowercase hex without prefix: 16 bytes → 32 digits,
  8 → 16. Any other string (MLflow's ``tr-…``, Langfuse's ids) is kept as written.
* Times: integers (or digit strings) are nanoseconds since the epoch (OTLP's
  ``startTimeUnixNano``); strings are ISO 8601 (``Z`` or an offset; no offset = UTC);
  unknown → 0.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime, timezone
from typing import Any

from unified.data.cells import is_missing

_HEX = re.compile(r"^(0x)?([0-9a-fA-F]{16}|[0-9a-fA-F]{32})$")
_B64 = re.compile(r"^[A-Za-z0-9+/]{11,22}={0,2}$")


def hex_id(value: Any) -> str | None:
    """A trace or span id as lowercase hex (rules in the module docstring); None/"" →
    None (OTLP writes an empty ``parentSpanId`` for a root)."""
    if is_missing(value):  # None, or a DataFrame's NaN / NA where a root has no parent
        return None
    text = str(value).strip()
    if not text or text.strip("0x") == "" or set(text) <= {"0"}:
        return None
    m = _HEX.match(text)
    if m:
        return m.group(2).lower()
    if _B64.match(text):
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return text
        if len(raw) in (8, 16):
            return raw.hex()
    return text


def ns_of(value: Any) -> int:
    """Nanoseconds since the epoch (rules in the module docstring)."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return 0
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
