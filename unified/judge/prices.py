"""Money cost: a price table per model and the dollar cost of a task's judge calls.

A price table maps a model name (as the judge reports it: ``JudgeConfig.model``, the
``.gguf`` file name, the embedding model) to USD per million tokens, input and output::

    usd = Σ_calls (input_tokens · usd_in + output_tokens · usd_out) / 1_000_000

Only calls that used tokens count (cache hits use none, so they cost nothing). When any
such call's model has no price the task's cost is ``None`` ("unknown"), never a partial
sum that would pass for the total. Estimated token counts (``Cost.tokens_estimated``)
make the dollar figure an estimate too.

Batch prices. A call answered through a Batch API job (``CallRecord.batch``) is priced
at the model's batch price: an explicit ``MODEL@batch=IN/OUT`` entry, else the online
price times ``BATCH_DISCOUNT`` (0.5)::

    usd_batch = Σ_calls (input_tokens · b_in + output_tokens · b_out) / 1_000_000
    (b_in, b_out) = prices["MODEL@batch"] or 0.5 · prices["MODEL"]

Sources, merged in this order (later wins): the ``[prices]`` section of a run file and
``--price MODEL=IN/OUT`` strings. The table in force for a run is set with
``price_scope(table)``; every ``TaskMeter`` created inside picks it up.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

Prices = dict[str, tuple[float, float]]
PER_TOKENS = 1_000_000
#: the Batch API's price relative to the online one. OpenAI: "a 50% cost discount
#: compared to synchronous APIs" (platform.openai.com/docs/guides/batch, and the batch
#: column of openai.com/api/pricing); Anthropic's Message Batches and Google's Gemini
#: batch mode state the same 50 %. A provider with another rate: a MODEL@batch entry.
BATCH_DISCOUNT = 0.5
BATCH_SUFFIX = "@batch"

_prices: contextvars.ContextVar[Mapping[str, tuple[float, float]] | None] = contextvars.ContextVar(
    "unified_prices", default=None
)


class PriceError(ValueError):
    """A price that cannot be read: one line naming the entry and the expected form."""


_FORM = "expected MODEL=IN/OUT in USD per 1M input/output tokens, e.g. gpt-4o-mini=0.15/0.60"


def _number(text: Any, where: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise PriceError(f"{where}: {text!r} is not a number; {_FORM}") from None
    if not math.isfinite(value) or value < 0:
        raise PriceError(f"{where}: a price must be a finite number >= 0, got {text!r}")
    return value


def parse_price(spec: str) -> tuple[str, tuple[float, float]]:
    """``"MODEL=IN/OUT"`` -> ``(model, (usd_in, usd_out))``. The model is everything before
    the last ``=`` (names such as ``meta-llama/Llama-3-8B`` keep their slashes)."""
    model, sep, pair = str(spec).rpartition("=")
    model = model.strip()
    if not sep or not model or "/" not in pair:
        raise PriceError(f"--price {spec}: {_FORM}")
    return model, _pair(pair, f"--price {spec}")


def _pair(text: str, where: str) -> tuple[float, float]:
    """``"IN/OUT"`` -> ``(usd_in, usd_out)``; ``where`` names the entry in errors."""
    usd_in, slash, usd_out = str(text).partition("/")
    if not slash:
        raise PriceError(f"{where}: {text!r} is not IN/OUT; {_FORM}")
    return _number(usd_in.strip(), where), _number(usd_out.strip(), where)


def _section_entry(model: str, value: Any, where: str) -> tuple[float, float]:
    """A ``[prices]`` value: ``"IN/OUT"``, ``[IN, OUT]`` or ``{input = IN, output = OUT}``."""
    if isinstance(value, str):  # named as the file's entry, not as a --price flag it never was
        return _pair(value, where)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return _number(value[0], where), _number(value[1], where)
    if isinstance(value, Mapping) and set(value) == {"input", "output"}:
        return _number(value["input"], where), _number(value["output"], where)
    raise PriceError(f'{where}: expected "IN/OUT", [IN, OUT] or {{input = IN, output = OUT}} in USD per 1M tokens')


def parse_prices(
    specs: Iterable[str] | None = None,
    *,
    section: Mapping[str, Any] | None = None,
    config_file: str | Path | None = None,
) -> Prices:
    """The price table from a run file's ``[prices]`` section (``config_file``, or an
    already-read ``section``) overridden by ``--price`` strings (``specs``). A model priced
    twice in ``specs`` with two prices is a ``PriceError`` (which was meant?); the same
    price twice is one."""
    table: Prices = {}
    if config_file is not None:
        from unified.judge.config import load_run_config

        section = {**((load_run_config(config_file).model_extra or {}).get("prices") or {}), **(section or {})}
        where_file = f"{config_file}: [prices]"
    else:
        where_file = "[prices]"
    if section is not None and not isinstance(section, Mapping):
        raise PriceError(f'{where_file} must be a table of MODEL = "IN/OUT" entries')
    for model, value in (section or {}).items():
        table[str(model)] = _section_entry(str(model), value, f"{where_file} {model}")
    given: dict[str, str] = {}  # model -> its --price as first written
    for spec in specs or ():
        model, pair = parse_price(spec)
        if model in given and table[model] != pair:
            raise PriceError(f"--price: {model} is priced twice, '{given[model]}' and '{spec}'; give one price")
        table[model] = pair
        given.setdefault(model, str(spec))
    return table


def usd_cost(records: Iterable[Any], prices: Mapping[str, tuple[float, float]] | None) -> float | None:
    """Dollars for ``records`` (``CallRecord``-like: model, input_tokens, output_tokens)
    under ``prices``; None without a table or when a call that used tokens is unpriced."""
    if not prices:
        return None
    total = 0.0
    for r in records:
        if not (r.input_tokens or r.output_tokens):
            continue  # a cache hit or a failed call: nothing was billed
        price = batch_price(prices, r.model) if getattr(r, "batch", False) else prices.get(r.model)
        if price is None:
            return None
        total += (r.input_tokens * price[0] + r.output_tokens * price[1]) / PER_TOKENS
    return total


def batch_price(prices: Mapping[str, tuple[float, float]] | None, model: str | None) -> tuple[float, float] | None:
    """``model``'s batch price: its ``MODEL@batch`` entry, else ``BATCH_DISCOUNT`` × its
    online price; None when the table has neither."""
    if not prices or model is None:
        return None
    explicit = prices.get(model + BATCH_SUFFIX)
    if explicit is not None:
        return explicit
    online = prices.get(model)
    return None if online is None else (online[0] * BATCH_DISCOUNT, online[1] * BATCH_DISCOUNT)


def current_prices() -> Mapping[str, tuple[float, float]] | None:
    """The price table in force (``price_scope``), or None."""
    return _prices.get()


@contextlib.contextmanager
def price_scope(prices: Mapping[str, tuple[float, float]] | None) -> Iterator[None]:
    """Price every task meter created inside (including in tasks spawned inside)."""
    token = _prices.set(dict(prices) if prices else None)
    try:
        yield
    finally:
        _prices.reset(token)


__all__ = [
    "BATCH_DISCOUNT",
    "PriceError",
    "batch_price",
    "Prices",
    "current_prices",
    "parse_price",
    "parse_prices",
    "price_scope",
    "usd_cost",
]
