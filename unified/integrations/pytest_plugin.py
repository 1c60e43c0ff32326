"""The pytest plugin of unified-rag-eval (entry point ``pytest11``: ``unified``), active in
every pytest session once the package is installed; ``-p no:unified`` turns it off.

One test file, any backend or judge, chosen on the command line::

    pytest tests/test_rag.py --unified-backend embedding
    pytest tests/test_rag.py --unified-judge-base-url http://127.0.0.1:8080/v1 --unified-judge-model qwen

Options (they become the defaults of ``unified.testing.assert_scores`` in the session):

    --unified-backend NAMES        backend or comma list (default: native; repeatable, merged)
    --unified-judge-base-url URL   OpenAI-compatible judge URL (needs --unified-judge-model)
    --unified-judge-model NAME     judge model name
    --unified-cache FILE|none      judge cache file kept across runs (default:
                                   .unified-eval/cache.sqlite under pytest's rootdir; none: no cache)

The default cache lives in the project folder, so a CI job that keeps that folder between
runs (its cache step) pays the judge once per new question, not once per run; the user's
cache folder, which CI machines start without, was the default before. ``none`` turns it off.

Each option but ``--unified-backend`` keeps one value: given twice with two values it is
a usage error naming both (pytest would keep the last without a word).

Also: the ``unified_judge`` fixture (the session's ``JudgeConfig``; the test is skipped
when no judge is configured), the marker ``@pytest.mark.unified(backend=..., thresholds=...,
**evaluate options)`` (defaults for the assert_scores calls of one test), and a terminal
summary at the end: per (metric, backend) checks, pass rate, errors and what the judges
cost (calls, cache hits, tokens).

Inert when unused: loading it imports nothing beyond ``unified``'s own light package
init; its per-test hooks look at a marker and at whether ``unified.testing`` has recorded
anything, and print nothing when it has not.

``pytest -n`` (pytest-xdist): supported. Each worker scores its own tests; the tallies
travel to the controller on the test reports, so the summary covers every worker. A
shared ``--unified-cache`` file is safe across workers (SQLite WAL); a shared ``out=``
folder is not (one writer per run folder: the second worker gets ``RunFolderBusy``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

_KEY = "unified-rag-eval"  # the name of the tallies in a report's user_properties (xdist)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("unified-rag-eval", "unified-rag-eval: defaults for unified.testing.assert_scores")
    # every option appends: a repeat is merged (--unified-backend) or refused (_one), never dropped
    group.addoption(
        "--unified-backend",
        dest="unified_backend",
        action="append",
        metavar="NAMES",
        default=None,
        help="backend or comma list for assert_scores (default: native; repeatable)",
    )
    group.addoption(
        "--unified-judge-base-url",
        dest="unified_judge_base_url",
        action="append",
        metavar="URL",
        default=None,
        help="OpenAI-compatible judge URL for assert_scores (needs --unified-judge-model)",
    )
    group.addoption(
        "--unified-judge-model",
        dest="unified_judge_model",
        action="append",
        metavar="NAME",
        default=None,
        help="judge model name for assert_scores",
    )
    group.addoption(
        "--unified-cache",
        dest="unified_cache",
        action="append",
        metavar="FILE",
        default=None,
        help="judge cache file for assert_scores, kept across runs (default: .unified-eval/cache.sqlite "
        "under the rootdir; 'none': no cache)",
    )


def _one(config: pytest.Config, dest: str) -> str | None:
    """The value of an option that keeps one; two different values are a usage error."""
    given = list(dict.fromkeys(config.getoption(dest) or []))
    if len(given) > 1:
        flag = "--" + dest.replace("_", "-")
        raise pytest.UsageError(
            f"{flag} is given twice, {given[0]!r} and {given[1]!r}: it keeps one value; give it once"
        )
    return given[0] if given else None


def _backends(config: pytest.Config) -> str | None:
    """``--unified-backend``, every occurrence (each may be a comma list) as one comma list."""
    given = config.getoption("unified_backend")
    return ",".join(given) if given else None


def _judge_option(config: pytest.Config) -> dict[str, Any] | None:
    url = _one(config, "unified_judge_base_url")
    model = _one(config, "unified_judge_model")
    if url and not model:
        raise pytest.UsageError("--unified-judge-base-url needs --unified-judge-model (the judge model's name)")
    if not model:
        return None
    return _Redacted({"model": model, "base_url": url})


class _Redacted(dict[str, Any]):
    """The judge option as a dict whose repr hides a URL's credentials: pytest prints the
    arguments of the frames in a failing test's traceback."""

    def __repr__(self) -> str:
        from unified.redact import redact_config

        return repr(redact_config(dict(self)))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "unified(backend=..., thresholds=..., **options): defaults for unified.testing.assert_scores in this test",
    )
    judge = _judge_option(config)
    backend = _backends(config)
    given = _one(config, "unified_cache")
    cache = _cache_choice(config, given)
    global session_cache
    session_cache = cache  # read by unified.testing when nothing else names a cache
    if judge or backend or given:  # unified.testing is only imported when asked for
        from unified import testing

        testing.configure(backend=backend, judge=judge, cache=cache)
    config.pluginmanager.register(_Session(config, judge, backend), "unified-rag-eval-session")


#: the judge cache of a session that names none: in the project, where CI can keep it
DEFAULT_CACHE = Path(".unified-eval") / "cache.sqlite"
#: this session's cache choice (``_cache_choice``); None outside a pytest session
session_cache: Path | bool | None = None


def _cache_choice(config: pytest.Config, given: str | None) -> Path | bool:
    """``--unified-cache``: a file, ``none``/``off`` (False: no cache), or by default
    ``DEFAULT_CACHE`` under pytest's rootdir (created when a judge is first asked)."""
    if given is None:
        return Path(config.rootpath) / DEFAULT_CACHE
    if given.strip().lower() in ("none", "off", "false", "no"):
        return False
    return Path(given)


@pytest.fixture(scope="session")
def unified_judge(pytestconfig: pytest.Config) -> Any:
    """The judge ``assert_scores`` uses in this session (a ``unified.judge.JudgeConfig``):
    ``--unified-judge-base-url``/``--unified-judge-model``, else ``UNIFIED_JUDGE_*`` from the
    environment. Skips the test when neither names a judge."""
    from unified.judge import JudgeConfig

    given = _judge_option(pytestconfig)
    judge = JudgeConfig(**given) if given else JudgeConfig.from_env()
    if judge is None:
        pytest.skip(
            "no judge configured: pass --unified-judge-base-url URL --unified-judge-model NAME "
            "(or set UNIFIED_JUDGE_MODEL)"
        )
    return judge


class _Session:
    """Per-session state: the marker's defaults around each test, and the tallies."""

    def __init__(self, config: pytest.Config, judge: dict[str, Any] | None, backend: str | None):
        self.config = config
        self.judge = judge
        self.backend = backend
        self.marked = False
        self.tallies: dict[tuple[str, str], dict[str, Any]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        marker = item.get_closest_marker("unified")
        if marker is None:
            return
        if marker.args:
            raise TypeError(
                "@pytest.mark.unified takes keyword arguments only, e.g. "
                "@pytest.mark.unified(backend='embedding', thresholds={'faithfulness': 7})"
            )
        from unified import testing

        testing.set_test_defaults(**marker.kwargs)
        self.marked = True

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        if self.marked:
            sys.modules["unified.testing"].set_test_defaults()
            self.marked = False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        outcome = yield
        testing = sys.modules.get("unified.testing")
        records = testing.drain_records() if testing is not None else []
        if not records:
            return
        if hasattr(self.config, "workerinput"):  # an xdist worker: the controller adds them up
            outcome.get_result().user_properties.append((_KEY, records))
        else:
            self.add(records)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if hasattr(self.config, "workerinput"):
            return
        for name, value in getattr(report, "user_properties", ()):
            if name == _KEY:
                self.add(value)

    def add(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            t = self.tallies.setdefault(
                (r["metric"], r["backend"]), {"checks": 0, "passed": 0, "errors": 0, "cost": {}}
            )
            for k in ("checks", "passed", "errors"):
                t[k] += r[k]
            for k, v in (r.get("cost") or {}).items():  # Cost.add: sums, and "estimated" if any was
                if v is None:  # usd without a price table: nothing to add
                    continue
                t["cost"][k] = (bool(t["cost"].get(k)) or v) if isinstance(v, bool) else (t["cost"].get(k) or 0) + v

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tallies:
            return
        terminalreporter.section(_KEY, sep="-")
        for line in summary_lines(self.tallies, self.backend, self.judge):
            terminalreporter.write_line(line)


def summary_lines(
    tallies: dict[tuple[str, str], dict[str, Any]], backend: str | None, judge: dict[str, Any] | None
) -> list[str]:
    """The terminal summary: the session's backend and judge, then a row per
    (metric, backend): checks, passed, pass rate = passed / checks, errors, judge calls,
    embedding calls, cache hits, tokens (``*`` = estimated from text length)."""
    from unified.redact import redact_url

    where = f"backend {backend or 'native (default)'}"
    if judge:
        where += f" · judge {judge['model']}" + (
            f" at {redact_url(judge['base_url'])}" if judge.get("base_url") else ""
        )
    head = (
        "metric",
        "backend",
        "checks",
        "passed",
        "pass rate",
        "errors",
        "judge calls",
        "embed calls",
        "cache hits",
        "tokens",
    )
    rows = [head]
    for (metric, b), t in sorted(tallies.items()):
        c = t["cost"]
        tokens = f"{c.get('input_tokens', 0) + c.get('output_tokens', 0)}{'*' if c.get('tokens_estimated') else ''}"
        rate = f"{t['passed'] / t['checks']:.0%}" if t["checks"] else "—"
        rows.append(
            (
                metric,
                b,
                str(t["checks"]),
                str(t["passed"]),
                rate,
                str(t["errors"]),
                str(c.get("calls", 0)),
                str(c.get("embedding_calls", 0)),
                str(c.get("cache_hits", 0)),
                tokens,
            )
        )
    width = [max(len(r[i]) for r in rows) for i in range(len(head))]
    table = [
        "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, width))) for r in rows
    ]
    return [where, *table]
