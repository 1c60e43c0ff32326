"""What a Ray actor needs to rebuild a run's backends and judges in its own process, and
its part of the run's limits.

A live ``Judges`` holds HTTP pools, semaphores and SQLite connections: none of it can
cross a process boundary. So the driver turns the run into *recipes*: per judge slot
its ``JudgeConfig`` / ``EmbeddingConfig`` (rebuilt in the actor with ``build_judges``,
exactly as the CLI builds them), per backend its class and constructor options, and the
judge cache as a factory that opens the same store from another process. A judge that
has no config (a caller's own ``ChatJudge``) is shipped with cloudpickle when it pickles;
anything that can be neither rebuilt nor pickled is a ``RayExecutorError`` naming it and
the way out, before any actor starts.

Limits are divided, never copied: with ``n`` actors, actor ``i`` gets

    share(total, n, i) = total // n + (1 if i < total % n else 0)

of every integer limit (groups in flight, judge concurrency) — the shares sum to the
total — and ``rpm / n`` of every requests-per-minute limit, so the cluster never sends
more than one process would be allowed to.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from unified.judge import budget
from unified.judge.base import Judges
from unified.judge.cache import CacheStore  # the judge layer's protocol; re-exported here
from unified.redact import one_line

LOCAL_EMBEDDER = "unified.judge.minilm.LocalEmbedder"
_SLOTS = ("chat", "chat2", "embedder")


class RayExecutorError(ValueError):
    """The run cannot be shipped to Ray as it is: one line naming what, and the way out."""


# ---------------------------------------------------------------- the pluggable cache


@dataclass(frozen=True)
class SQLiteCacheFactory:
    """Opens the SQLite judge cache at ``path`` (WAL mode: safe for several processes on
    one machine; on another machine the same path is another, local file)."""

    path: str

    def __call__(self) -> CacheStore:
        from unified.judge.cache import JudgeCache

        return JudgeCache(self.path)


@dataclass(frozen=True)
class Unpickled:
    """A factory that returns an object shipped with cloudpickle."""

    payload: bytes

    def __call__(self) -> Any:
        import pickle

        return pickle.loads(self.payload)


def cache_factory(store: Any) -> Callable[[], Any]:
    """How an actor opens ``store``: its own ``remote_factory()``, the SQLite file by path,
    or the pickled store itself."""
    from unified.judge.cache import JudgeCache

    own = getattr(store, "remote_factory", None)
    if callable(own):
        return own()
    if isinstance(store, JudgeCache):  # absolute: an actor's working directory is not the driver's
        return SQLiteCacheFactory(str(Path(store.path).resolve()))
    return Unpickled(ship(store, f"the judge cache ({type(store).__name__})"))


# ---------------------------------------------------------------- recipes


@dataclass(frozen=True)
class Slot:
    """One judge of the bundle: rebuilt from ``config`` in the actor, or ``pickled``."""

    config: Any = None
    pickled: bytes | None = None
    cached: bool = False  # the original sat behind the run's cache store


@dataclass(frozen=True)
class JudgesRecipe:
    chat: Slot | None = None
    chat2: Slot | None = None
    embedder: Slot | None = None
    single_judge: bool = False
    cache: Callable[[], Any] | None = None


@dataclass(frozen=True)
class BackendRecipe:
    """``cls(judges, **options)`` in the actor; ``judges`` indexes ``RunRecipe.judges``."""

    name: str
    cls: type
    options: dict[str, Any]
    judges: int


@dataclass(frozen=True)
class RunRecipe:
    """Everything an actor builds once: backends, their judges, the run's limits, and the
    names (never the values) of the environment variables holding judge keys."""

    backends: tuple[BackendRecipe, ...]
    judges: tuple[JudgesRecipe, ...]
    concurrency: int
    key_env: tuple[str, ...] = field(default=())


def ship(obj: Any, what: str) -> bytes:
    """cloudpickle of ``obj``, or a ``RayExecutorError`` naming ``what`` and the way out."""
    from ray import cloudpickle

    try:
        return cloudpickle.dumps(obj)
    except Exception as e:
        raise RayExecutorError(
            f"executor='ray' cannot ship {what} to the Ray actors ({type(e).__name__}: {one_line(e, 160)}); "
            "configure the judge with a JudgeConfig (judge=..., or --base-url/--model) so each actor "
            "builds its own, or use executor='local'"
        ) from None


def _config_of(obj: Any) -> Any:
    from unified.judge.config import EmbeddingConfig, JudgeConfig

    cfg = getattr(obj, "config", None)
    if isinstance(cfg, (JudgeConfig, EmbeddingConfig)):
        return cfg
    if f"{type(obj).__module__}.{type(obj).__qualname__}" == LOCAL_EMBEDDER:
        return EmbeddingConfig(kind="local", batch_size=getattr(obj, "batch_size", 64))
    return None


def _is_ours(obj: Any) -> bool:
    """A wrapper the judge layer builds itself (the cache, and whatever build_judges adds):
    rebuilding from the config reproduces it."""
    return type(obj).__module__.startswith("unified.judge")


def slot_recipe(judge: Any, what: str) -> tuple[Slot, Any]:
    """(how to rebuild ``judge``, the cache store found on its wrapper chain).

    The chain is walked through ``.inner`` while its objects are the judge layer's own; the
    first with a config is rebuilt from it. Otherwise the object where the walk stopped (a
    caller's judge under our cache wrapper, or the caller's whole object) is pickled."""
    store, cur = None, judge
    while _is_ours(cur):
        store = store if store is not None else getattr(cur, "cache", None)
        cfg = _config_of(cur)
        if cfg is not None:
            return Slot(config=cfg, cached=store is not None), store
        inner = getattr(cur, "inner", None)
        if inner is None:
            break
        cur = inner
    if cur is judge:
        store = None  # pickled whole, with whatever it holds
    return Slot(pickled=ship(cur, f"{what} ({type(cur).__name__})"), cached=store is not None), store


def judges_recipe(judges: Judges) -> tuple[JudgesRecipe, tuple[str, ...]]:
    """The recipe of one bundle and the key variables its configs name (set on the driver)."""
    slots: dict[str, Slot | None] = {}
    store = None
    keys: list[str] = []
    for name in _SLOTS:
        j = getattr(judges, name, None)
        if j is None:
            slots[name] = None
            continue
        slot, found = slot_recipe(j, f"judges.{name}")
        slots[name] = slot
        store = store if store is not None else found
        env = getattr(slot.config, "api_key_env", None)
        if env and os.environ.get(env) and getattr(slot.config, "kind", "openai") != "local":
            keys.append(env)
    return (
        JudgesRecipe(
            slots["chat"],
            slots["chat2"],
            slots["embedder"],
            bool(judges.single_judge),
            cache_factory(store) if store is not None else None,
        ),
        tuple(keys),
    )


def run_recipe(backends: Sequence[Any], concurrency: int) -> RunRecipe:
    """Recipes of ``backends`` (the first of each name, as the run plan keeps it) and of the
    judge bundles they hold (one recipe per bundle, so backends that share judges in the
    driver share them in each actor, with one set of limits)."""
    bundles: dict[int, int] = {}
    judges: list[JudgesRecipe] = []
    keys: list[str] = []
    out: list[BackendRecipe] = []
    for b in backends:
        if any(r.name == b.name for r in out):
            continue
        options = getattr(b, "options", None)
        if not isinstance(options, dict):
            raise RayExecutorError(
                f"executor='ray' cannot rebuild backend '{b.name}' ({type(b).__name__}): it "
                "keeps no constructor options (self.options); use executor='local'"
            )
        j = getattr(b, "judges", None) or Judges()
        if id(j) not in bundles:
            recipe, names = judges_recipe(j)
            bundles[id(j)] = len(judges)
            judges.append(recipe)
            keys += [k for k in names if k not in keys]
        ship((type(b), options), f"backend '{b.name}' ({type(b).__name__}) and its options")
        # paths made absolute: an actor's working directory is not the driver's
        options = {k: v.resolve() if isinstance(v, Path) else v for k, v in options.items()}
        out.append(BackendRecipe(b.name, type(b), options, bundles[id(j)]))
    return RunRecipe(tuple(out), tuple(judges), max(1, concurrency), tuple(keys))


# ---------------------------------------------------------------- limits


def share(total: int, n: int, i: int) -> int:
    """Actor ``i``'s part of an integer limit (module docstring); the parts sum to ``total``."""
    return total // n + (1 if i < total % n else 0)


def divided(config: Any, n: int, i: int) -> Any:
    """``config`` with its concurrency and requests-per-minute cut to actor ``i``'s share."""
    if config is None or n == 1:
        return config
    update: dict[str, Any] = {}
    if hasattr(config, "concurrency"):  # a judge's unset concurrency is decided by its kind
        update["concurrency"] = share(budget.concurrency(config), n, i)
    if getattr(config, "requests_per_minute", None):
        update["requests_per_minute"] = config.requests_per_minute / n
    return config.model_copy(update=update)


def max_actors(recipe: RunRecipe) -> int:
    """The most actors the limits allow: each must get at least one group slot and one
    slot of every remote judge's concurrency (a local embedder has no remote limit)."""
    caps = [recipe.concurrency]
    for j in recipe.judges:
        for slot in (j.chat, j.chat2, j.embedder):
            cfg = slot.config if slot is not None else None
            if cfg is not None and getattr(cfg, "kind", "openai") != "local":
                caps.append(budget.concurrency(cfg))  # unset: decided by the judge's kind
    return max(1, min(caps))


# ---------------------------------------------------------------- in the actor


def build_judges_from(recipe: JudgesRecipe, n: int, i: int) -> Judges:
    """Actor ``i``'s bundle: configs rebuilt with ``build_judges`` (limits divided),
    pickled judges unpickled, each behind the store opened from the cache factory when
    the original was behind the run's store."""
    from unified.judge import build_judges
    from unified.judge.cache import CachedChatJudge, CachedEmbedder, JudgeCache

    store = recipe.cache() if recipe.cache is not None else None
    sqlite = store if isinstance(store, JudgeCache) else None

    def cfg(slot: Slot | None) -> Any:
        return divided(slot.config, n, i) if slot is not None and slot.config is not None else None

    judges = build_judges(
        judge=cfg(recipe.chat),
        judge2=cfg(recipe.chat2),
        embedding=cfg(recipe.embedder),
        cache=sqlite if sqlite is not None else False,
        single_judge=recipe.single_judge,
    )
    for name in _SLOTS:
        slot: Slot | None = getattr(recipe, name)
        if slot is None:
            continue
        obj = getattr(judges, name) if slot.pickled is None else Unpickled(slot.pickled)()
        # build_judges already put configured judges behind a SQLite store
        wrap = slot.cached and store is not None and (slot.pickled is not None or sqlite is None)
        if wrap and store is not None:
            obj = CachedEmbedder(obj, store) if name == "embedder" else CachedChatJudge(obj, store)
        setattr(judges, name, obj)
    return judges


def build_backends(recipe: RunRecipe, n: int, i: int) -> dict[str, Any]:
    """Actor ``i``'s backends by name, each bundle of judges built once."""
    bundles = [build_judges_from(j, n, i) for j in recipe.judges]
    return {b.name: b.cls(bundles[b.judges], **b.options) for b in recipe.backends}
