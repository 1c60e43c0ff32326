"""Log a finished run to MLflow: one MLflow run per invocation of ``unified-eval run|compare
--mlflow URI`` or ``evaluate(..., mlflow=URI)``.

What one MLflow run holds:

* params — ``backends``, ``metrics`` (names as written), ``judge.model``, ``judge2.model``,
  ``embedding.model``, ``single_judge``, ``dataset.path`` and ``dataset.sha256`` (of the
  file's bytes; for an input that is not a file, of its samples' fingerprints:
  sha256 over the sorted ``sample_id\\tsample_hash`` lines), ``dataset.rows``.
* metrics — per (metric, backend): ``<metric>/<backend>/mean``, ``…/pass_rate`` (0–1),
  ``…/errors``, ``…/count``; per cross-checked pair: ``<metric>/<a>_vs_<b>/spearman`` and
  ``…/kappa`` (Cohen's κ of the pass verdicts); ``run/seconds``, ``run/judge_calls`` (LLM), ``run/embedding_calls``,
  ``run/cache_hits``, ``run/skipped_pairs`` (pairs that could not run; why: summary.json).
  A value that does not exist (no successful score, κ undefined) is not logged: MLflow
  never sees NaN.
* artefacts — ``scores.jsonl``, ``summary.json``, ``report.html``, ``crosscheck.json``
  (compare, or any run with two or more backends) and ``mlflow_keys.json`` (MLflow key →
  the metric name as written).

MLflow keys allow only letters, digits, ``_ - . /`` (and ``:`` except on Windows), so each
part of a key is mapped (``mlflow_key``): ``@`` → ``_at_``, ``[`` and ``,`` → ``.``, ``=`` →
``-``, ``]`` dropped, any other character → ``_``, runs of dots collapsed. Examples:
``precision@3`` → ``precision_at_3``, ``context_relevancy[variant=sentence]`` →
``context_relevancy.variant-sentence``. Two names that map to the same key get ``_2``,
``_3``, … (``mlflow_keys.json`` says which is which).

Tracking URI, passed to MLflow exactly as given (and shown so, credentials masked):

* ``http(s)://…`` — a tracking server (``mlflow server``); ``mlflow-skinny`` is enough.
* ``sqlite:///runs.db`` (relative to the working folder) or ``sqlite:////abs/runs.db`` —
  MLflow 3's default store; an experiment created here keeps its artefacts beside the
  database, in ``mlruns/`` (``artifact_location``); ``postgresql://``, ``mysql://``,
  ``mssql://`` likewise. These
  need the full ``mlflow`` package (SQLAlchemy and alembic): ``require_mlflow`` says so,
  with the pip command, before any scoring, and refuses ``sqlite://host/…`` (two
  slashes: the path would be read as a host) and a database whose folder does not exist.
* a path or ``file:///…`` — a local file store. MLflow 3 keeps file stores in maintenance
  mode and opens them only with ``MLFLOW_ALLOW_FILE_STORE=true``: it is set while logging
  (read the store back with the same variable set), and a ``FutureWarning`` says the
  store is deprecated. Still supported.

``True`` means ``$MLFLOW_TRACKING_URI``, else ``./mlruns``. Experiment:
``$MLFLOW_EXPERIMENT_NAME``, else ``unified-rag-eval``.

Bounded time. Logging is the last step of a finished run and must never hold the
process: the whole log (experiment lookup, run, params, metrics, artefacts) gets
``timeout`` seconds — ``--mlflow-timeout``, else ``$UNIFIED_MLFLOW_TIMEOUT``, else
``DEFAULT_TIMEOUT_S`` (60 s). MLflow's own HTTP client would otherwise retry a refused
server 7 times with exponential backoff (about 4 minutes) and wait 120 s for each answer;
within the budget it gets ``MLFLOW_HTTP_REQUEST_MAX_RETRIES=2`` and
``MLFLOW_HTTP_REQUEST_TIMEOUT=min(120, timeout)`` unless you set those variables. The log
runs in a daemon thread that the caller waits for in short steps, so Ctrl-C and SIGTERM
still end the process (the CLI exits 130 / 143) and a log past its budget is abandoned
with one line (``did not finish within 60 s``). Either way the run folder is already
complete: logging only reads it.

``mlflow`` (the ``mlflow`` extra: ``mlflow-skinny``) is imported only here, only when used.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import math
import os
import re
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from unified.run.runfolder import CROSSCHECK_FILE, REPORT_FILE, SCORES_FILE, SUMMARY_FILE

INSTALL_HINT = "MLflow logging needs the mlflow extra: pip install 'unified-rag-eval[mlflow]'"
FULL_HINT = "pip install 'mlflow>=3,<=3.17.2'"
#: tracking URI schemes whose store is a database: SQLAlchemy and alembic, which come with
#: the full ``mlflow`` package and not with ``mlflow-skinny``
DB_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
DEFAULT_EXPERIMENT = "unified-rag-eval"
KEYS_FILE = "mlflow_keys.json"
_MAX_PARAM = 6000  # MLflow's limit on a param value
_BATCH = 100  # MLflow's limit on params (and tags) per log_batch request
DEFAULT_TIMEOUT_S = 60.0
TIMEOUT_ENV = "UNIFIED_MLFLOW_TIMEOUT"
_WAIT_STEP_S = 0.1  # how often the waiting thread wakes (signals are handled between steps)


class MlflowUnavailable(ImportError):
    """The mlflow extra is not installed (the message is the pip command)."""


class MlflowUriError(ValueError):
    """A tracking URI that cannot work (said before any scoring)."""


class MlflowInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM while logging (``signal`` says which); the run folder is complete."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal = signal_name


class MlflowLogError(RuntimeError):
    """Logging to MLflow failed; ``report`` is the run's Report (its results are intact)."""

    def __init__(self, message: str, report: Any = None):
        super().__init__(message)
        self.report = report


def require_mlflow(target: Any = True) -> str:
    """Check, before a run starts and without importing mlflow, that a run can be logged to
    ``target``; return its tracking URI (``resolve_tracking_uri``). Raises
    ``MlflowUnavailable`` (what is missing and the pip command) without mlflow, or without
    SQLAlchemy / alembic for a database store; ``MlflowUriError`` for a sqlite URI that
    cannot work."""
    from unified.redact import redact_url

    if importlib.util.find_spec("mlflow") is None:
        raise MlflowUnavailable(INSTALL_HINT)
    uri = resolve_tracking_uri(target)
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme in DB_SCHEMES:
        missing = [m for m in ("sqlalchemy", "alembic") if importlib.util.find_spec(m) is None]
        if missing:
            raise MlflowUnavailable(
                f"MLflow logging to {redact_url(uri)} needs the full mlflow package ({' and '.join(missing)} "
                f"missing: mlflow-skinny cannot open a {scheme} store): {FULL_HINT}"
            )
    if scheme == "sqlite":
        _check_sqlite(uri)
    return uri


def sqlite_path(uri: str) -> Path:
    """The database file of a ``sqlite:`` URI, as SQLAlchemy reads it: ``sqlite:///runs.db``
    → ``runs.db`` (in the working folder), ``sqlite:////tmp/runs.db`` → ``/tmp/runs.db``.
    Raises ``MlflowUriError`` for two slashes (``sqlite://tmp/x.db`` names a host ``tmp``)
    and for an in-memory database (the run would vanish with the process)."""
    from unified.redact import redact_url

    shown = redact_url(uri)  # sqlite://user:pw@host/x.db is a typo, but its password is still one
    rest = uri[len("sqlite:") :]
    if not rest.startswith("//"):
        raise MlflowUriError(f"{shown}: a sqlite URI starts with sqlite:/// (sqlite:///runs.db)")
    rest = rest[2:].split("?", 1)[0]
    if rest in ("", "/", "/:memory:"):
        raise MlflowUriError(f"{shown}: an in-memory database forgets the run when the process ends; name a file")
    if not rest.startswith("/"):
        if "@" in rest.split("/", 1)[0]:
            rest = rest.split("@", 1)[1]  # the hint must not repeat the userinfo
        host = rest.split("/", 1)[0]
        raise MlflowUriError(
            f"{shown}: '{host}' would be read as a host; a sqlite URI has three slashes before a relative "
            f"path (sqlite:///{rest}) and four before an absolute one (sqlite:////{rest})"
        )
    return Path(rest[1:])


def _check_sqlite(uri: str) -> None:
    path = sqlite_path(uri)
    if path.is_dir():
        raise MlflowUriError(f"{uri}: {path} is a folder; name the database file inside it")
    if not path.parent.is_dir():
        raise MlflowUriError(
            f"{uri}: the folder {path.parent} does not exist (MLflow creates the database, not its folder)"
        )


def artifact_location(uri: str) -> str | None:
    """Where a new experiment keeps its artefacts: beside a sqlite database, in
    ``<its folder>/mlruns`` — MLflow's own default is ``./mlruns`` of whatever folder the
    experiment happens to be created from. None (MLflow decides) for other stores."""
    if not uri.startswith("sqlite:"):
        return None
    return (sqlite_path(uri).resolve().parent / "mlruns").as_uri()


def file_store_note(uri: str) -> str | None:
    """The deprecation of MLflow 3 file stores, for a ``file:`` URI; else None."""
    if not uri.startswith("file:"):
        return None
    return (
        f"{uri} is an MLflow file store: MLflow 3 keeps them in maintenance mode (opened only with "
        f"MLFLOW_ALLOW_FILE_STORE=true); its default store is sqlite:///mlflow.db (full mlflow package)"
    )


def resolve_tracking_uri(target: Any) -> str:
    """``True``/``""`` → ``$MLFLOW_TRACKING_URI`` or ``./mlruns``; a path → its absolute
    ``file://`` URI; a URI (``scheme:…``) unchanged."""
    if target is True or target is None or (isinstance(target, str) and not target.strip()):
        target = os.environ.get("MLFLOW_TRACKING_URI") or "mlruns"
    text = str(target).strip()
    if text == "databricks" or re.match(r"^[A-Za-z][A-Za-z0-9+.\-]+:", text):
        return text  # a URI; one-letter "schemes" are Windows drive letters
    return Path(text).expanduser().resolve().as_uri()


def mlflow_key(*parts: str) -> str:
    """One valid MLflow key from name parts joined by ``/`` (mapping in the module docstring)."""
    clean = []
    for part in parts:
        p = str(part).replace("@", "_at_").replace("[", ".").replace(",", ".").replace("=", "-").replace("]", "")
        p = re.sub(r"[^A-Za-z0-9_.\-]", "_", p)
        p = re.sub(r"\.{2,}", ".", p).strip(".")
        clean.append(p or "_")
    return "/".join(clean)[:250]


class _Keys:
    """MLflow key → name as written; a second name on a taken key gets ``_2``, ``_3``, …"""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def key(self, name: str, *rest: str) -> str:
        base = mlflow_key(name)
        key, n = base, 1
        while self.names.get(key, name) != name:
            n += 1
            key = f"{base}_{n}"
        self.names[key] = name
        return "/".join([key, *(mlflow_key(r) for r in rest)])


# ---------------------------------------------------------------- what is logged


def dataset_hash(source: Any, report: Any) -> tuple[str | None, str]:
    """(path, sha256): of the file's bytes when ``source`` names a file, else of the
    samples' fingerprints (sorted ``sample_id\\tsample_hash`` lines)."""
    if isinstance(source, (str, Path)) and Path(source).is_file():
        h = hashlib.sha256()
        with open(source, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return str(Path(source).resolve()), h.hexdigest()
    lines = sorted({f"{d['sample_id']}\t{d.get('sample_hash') or ''}" for d in report.iter_score_dicts()})
    return None, hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def run_params(summary: Mapping[str, Any], report: Any) -> dict[str, str]:
    """The params of the MLflow run (see the module docstring), secret-free."""
    from unified.redact import redact_config

    config = redact_config(dict(summary.get("config") or {}))
    judges = config.get("judges") or {}
    params: dict[str, Any] = {
        "backends": ",".join(config.get("backends") or report.backends()),
        "metrics": ",".join(config.get("metrics") or sorted({d["metric"] for d in report.iter_score_dicts()})),
        "single_judge": judges.get("single_judge"),
    }
    # the CLI describes judges as judge/judge2/embedding, evaluate() as chat/chat2/embedder
    for name, slots in (
        ("judge", ("judge", "chat")),
        ("judge2", ("judge2", "chat2")),
        ("embedding", ("embedding", "embedder")),
    ):
        desc = next((judges[s] for s in slots if isinstance(judges.get(s), dict)), None)
        params[f"{name}.model"] = desc.get("model") if desc else None
    source = config.get("source")
    path, digest = dataset_hash(source, report)
    params["dataset.path"] = path or source
    params["dataset.sha256"] = digest
    counts = summary.get("counts") or {}
    params["dataset.rows"] = counts.get("rows_read")
    return {k: _param_value(v) for k, v in params.items() if v is not None and v != ""}


def _param_value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    if len(text) <= _MAX_PARAM:
        return text
    return text[: _MAX_PARAM - 40] + " … (truncated; see summary.json)"


def run_metrics(
    aggregates: list[Any], crosscheck: Mapping[str, Any] | None, timings: Mapping[str, Any], keys: _Keys
) -> dict[str, float]:
    """The metrics of the MLflow run (see the module docstring); finite numbers only."""
    out: dict[str, Any] = {}
    for a in aggregates:
        for field in ("mean", "pass_rate", "errors", "count"):
            out[keys.key(a.metric, a.backend, field)] = getattr(a, field)
    for metric, block in ((crosscheck or {}).get("metrics") or {}).items():
        for p in block.get("pairs") or []:
            pair = f"{p.get('a')}_vs_{p.get('b')}"
            out[keys.key(metric, pair, "spearman")] = p.get("spearman")
            out[keys.key(metric, pair, "kappa")] = p.get("cohen_kappa")
    for name in ("seconds", "judge_calls", "embedding_calls", "cache_hits"):
        out[f"run/{name}"] = timings.get(name)
    return {
        k: float(v)
        for k, v in out.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def _artifacts(report: Any, summary: Mapping[str, Any], folder: Path | None, staging: Path) -> tuple[list[Path], Any]:
    """(files to upload, the cross-check): from the run folder when there, else written
    into ``staging`` from the Report."""

    def have(name: str) -> Path | None:
        p = folder / name if folder is not None else None
        return p if p is not None and p.is_file() else None

    files = [have(SCORES_FILE) or report.to_jsonl(staging / SCORES_FILE)]
    summary_file = have(SUMMARY_FILE)
    if summary_file is None:
        summary_file = staging / SUMMARY_FILE
        summary_file.write_text(json.dumps(dict(summary), indent=2, default=str), encoding="utf-8")
    files.append(summary_file)
    cc_file = have(CROSSCHECK_FILE)
    crosscheck = json.loads(cc_file.read_text(encoding="utf-8")) if cc_file else report.crosscheck()
    if cc_file is None and crosscheck is not None:
        cc_file = staging / CROSSCHECK_FILE
        cc_file.write_text(json.dumps(crosscheck, indent=2, default=str), encoding="utf-8")
    files += [cc_file] if cc_file else []
    files.append(have(REPORT_FILE) or report.write_html(staging / REPORT_FILE))
    return files, crosscheck


# ---------------------------------------------------------------- logging

_LOGGING = threading.Lock()  # one log at a time per process: the variable below is process-wide


@contextlib.contextmanager
def _file_store_allowed(uri: str) -> Iterator[None]:
    """MLflow 3 refuses a file store unless MLFLOW_ALLOW_FILE_STORE is set: set it for the
    duration of the logging (only for file URIs), then restore what was there."""
    with _LOGGING:
        if not uri.startswith("file:") or "MLFLOW_ALLOW_FILE_STORE" in os.environ:
            yield
            return
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        try:
            yield
        finally:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)


def logging_timeout(timeout: float | None = None) -> float:
    """The whole log's budget in seconds: ``timeout``, else ``$UNIFIED_MLFLOW_TIMEOUT``,
    else ``DEFAULT_TIMEOUT_S``; a value that is not a positive number is a ``ValueError``."""
    raw: Any = timeout if timeout is not None else (os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        where = "--mlflow-timeout" if timeout is not None else f"${TIMEOUT_ENV}"
        raise ValueError(f"{where} {raw!r}: expected a positive number of seconds")
    return value


@contextlib.contextmanager
def _http_budget(timeout: float) -> Iterator[None]:
    """MLflow's HTTP retries and per-request wait fitted into the budget (module
    docstring) while logging; a variable the user set is left as it is."""
    wanted = {
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, int(min(120.0, timeout)))),
    }
    added = [k for k in wanted if k not in os.environ]
    os.environ.update({k: wanted[k] for k in added})
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


class _Worker:
    """``fn()`` in a daemon thread (a hung log must not keep the process alive); its
    value or its exception, once done."""

    def __init__(self, fn: Callable[[], str]):
        self.box: dict[str, Any] = {}
        self.thread = threading.Thread(target=self._run, args=(fn,), name="unified-mlflow", daemon=True)
        self.thread.start()

    def _run(self, fn: Callable[[], str]) -> None:
        try:
            self.box["value"] = fn()
        except BaseException as e:  # re-raised in the waiting thread
            self.box["error"] = e

    def result(self) -> str:
        if "error" in self.box:
            raise self.box["error"]
        return self.box["value"]


def _overdue(uri: str, budget: float, report: Any) -> MlflowLogError:
    from unified.redact import redact_url

    return MlflowLogError(
        f"MLflow logging to {redact_url(uri)} did not finish within {budget:g} s "
        f"(--mlflow-timeout / ${TIMEOUT_ENV}); the run folder is complete: log it again "
        "when the tracking server answers",
        report,
    )


def log_run(
    report: Any,
    tracking_uri: Any = True,
    *,
    summary: Mapping[str, Any] | None = None,
    folder: str | Path | None = None,
    tags: Mapping[str, str] | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    timeout: float | None = None,
) -> str:
    """Log one finished run as one MLflow run within ``timeout`` seconds; returns its run id.

    ``report``: the run's Report; ``summary``: its summary dict (default: the folder's
    ``summary.json``); ``folder``: the run folder the artefacts come from (default
    ``report.run_dir``; a file missing there is written from the Report); ``timeout``:
    the budget (``logging_timeout``). Raises ``MlflowUnavailable`` without the extra,
    ``MlflowUriError`` for a URI that cannot work (both checked by ``require_mlflow``
    before a run, too), ``MlflowLogError`` (one line, URI redacted) when MLflow fails or
    the budget runs out. A file store gets a ``FutureWarning`` (deprecated by MLflow 3,
    still supported). The calling thread waits in short steps: a signal handler runs
    between them."""
    import warnings

    budget = logging_timeout(timeout)
    uri = require_mlflow(tracking_uri)
    note = file_store_note(uri)
    if note is not None:
        warnings.warn(note, FutureWarning, stacklevel=2)
    work = _Worker(
        lambda: _log_now(
            report, uri, budget, summary=summary, folder=folder, tags=tags, experiment=experiment, run_name=run_name
        )
    )
    deadline = time.monotonic() + budget
    while work.thread.is_alive():
        left = deadline - time.monotonic()
        if left <= 0:
            raise _overdue(uri, budget, report)
        work.thread.join(min(left, _WAIT_STEP_S))
    return work.result()


class MlflowLogging:
    """Where a finished run is logged, checked when made: a missing extra, a URI that
    cannot work or a bad budget is said before any judge is paid (``require_mlflow``,
    ``logging_timeout``). ``unified.api`` makes one for ``mlflow=``, the CLI for
    ``--mlflow``; both log through ``log``."""

    def __init__(self, target: Any = True, timeout: float | None = None):
        self.target = target
        self.uri = require_mlflow(target)
        self.budget = logging_timeout(timeout)

    def log(
        self,
        report: Any,
        *,
        summary: Mapping[str, Any] | None = None,
        folder: str | Path | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """``log_run`` within this target's budget; the MLflow run's id."""
        return log_run(report, self.target, summary=summary, folder=folder, tags=tags, timeout=self.budget)


def _log_now(
    report: Any,
    uri: str,
    budget: float,
    *,
    summary: Mapping[str, Any] | None = None,
    folder: str | Path | None = None,
    tags: Mapping[str, str] | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
) -> str:
    """The log itself (``log_run``'s worker): artefacts, params, metrics, one MLflow run."""
    from unified.redact import one_line, redact_url, url_secrets

    folder = Path(folder) if folder is not None else report.run_dir
    summary = dict(summary if summary is not None else report.run_summary())
    try:
        with (
            _file_store_allowed(uri),
            _http_budget(budget),
            tempfile.TemporaryDirectory(prefix="unified-mlflow-") as tmp,
        ):
            files, crosscheck = _artifacts(report, summary, folder, Path(tmp))
            keys = _Keys()
            metrics = run_metrics(report.summary(), crosscheck, summary.get("timings") or {}, keys)
            metrics["run/skipped_pairs"] = float(len(summary.get("skipped_pairs") or []))
            (Path(tmp) / KEYS_FILE).write_text(json.dumps(keys.names, indent=2, ensure_ascii=False), encoding="utf-8")
            name = run_name or (folder.name if folder is not None and report.run_dir is not None else "evaluate")
            all_tags = {
                "mlflow.source.name": "unified-eval",
                **(
                    {"unified.run_dir": str(folder.resolve())}
                    if folder is not None and report.run_dir is not None
                    else {}
                ),
                **(tags or {}),
            }
            return _send(
                uri,
                experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT,
                name,
                run_params(summary, report),
                metrics,
                all_tags,
                [*files, Path(tmp) / KEYS_FILE],
            )
    except MlflowUnavailable:
        raise
    except Exception as e:  # MlflowException, OSError, a refused connection: one line, never a traceback
        text = one_line(e, 300, secrets=url_secrets(uri))
        raise MlflowLogError(f"MLflow logging to {redact_url(uri)} failed: {text}", report) from None


def _send(
    uri: str,
    experiment: str,
    run_name: str,
    params: Mapping[str, str],
    metrics: Mapping[str, float],
    tags: Mapping[str, str],
    files: list[Path],
) -> str:
    """One MLflow run through the client API (no global active run is touched)."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        try:
            exp_id = client.create_experiment(experiment, artifact_location=artifact_location(uri))
        except Exception:  # another process created it first
            created = client.get_experiment_by_name(experiment)
            if created is None:
                raise
            exp_id = created.experiment_id
    else:
        exp_id = exp.experiment_id
    run = client.create_run(exp_id, run_name=run_name, tags=dict(tags))
    run_id = run.info.run_id
    try:
        now = int(time.time() * 1000)
        p_items = [Param(k, v) for k, v in params.items()]
        m_items = [Metric(k, v, now, 0) for k, v in metrics.items()]
        for i in range(0, max(len(p_items), len(m_items)), _BATCH):
            client.log_batch(run_id, metrics=m_items[i : i + _BATCH], params=p_items[i : i + _BATCH])
        for f in files:
            client.log_artifact(run_id, str(f))
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise
    client.set_terminated(run_id, "FINISHED")
    return run_id


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """While the CLI waits for MLflow, SIGTERM and Ctrl-C raise ``MlflowInterrupted`` in
    the waiting (main) thread instead of being deferred: the run folder is already whole,
    and a signal must end the process with its exit code. The previous handler returns."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum: int, frame: Any) -> None:
        raise MlflowInterrupted("SIGTERM")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    except MlflowInterrupted:
        raise
    except KeyboardInterrupt:
        raise MlflowInterrupted("SIGINT") from None
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
