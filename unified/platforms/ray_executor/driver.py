"""``RayExecutor``: the run's task groups scored by a pool of Ray actors, results streamed
back to the driver, which alone writes the run folder.

Flow::

    runner.groups() ──► blocks of ``block_size`` groups ──► actor i (≤ 2 blocks in flight each)
                                                              │ score_group, as locally
    on_done(group, scores) ◄── exactly once per group ◄───────┘ batches as they finish

Memory: the driver pulls groups from the runner's reader only when an actor has room, so
it holds at most ``actors × BLOCKS_PER_ACTOR`` blocks (plus the one being filled) however
long the input. What grows with the input is the run path's own per-sample memory, the
same as on the local executor (``benchmarks/ray_memory.py``: ~8 KB a sample on both).

Exactly-once: every group the runner yields goes into exactly one ``Block``. The block
remembers which of its groups it has delivered (``Block.accept``); a result for a group
already delivered is dropped and counted (``stats["duplicates_dropped"]``). When the
actor dies mid-block (killed, OOM), the driver replaces it and sends only the groups not
yet delivered; after ``MAX_ATTEMPTS`` deaths on one block its undelivered groups end as
explicit error lines (resumable with ``--retry-errors``). When the actor's *node* died
(the cluster says so while the replacement waits for a CPU), the slot is retired and its
blocks go to the actors left, with a warning on stderr and the node in
``summary()["nodes_lost"]``; with no actor left the run stops, the rest unscored (a rerun
scores it). Ray's own task
retries are off on purpose: Ray replays a streaming generator by *position* ("skip the
first k items"), and results in completion order differ between attempts, so a replay
could silently lose one group and repeat another.

Limits: see ``recipes`` — the group window and each judge's concurrency and
requests-per-minute are divided among the actors. Resume and ``--retry-errors`` need
nothing here: the runner yields only the groups still to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Iterable, Iterator, Sequence

from unified.judge.base import record_call
from unified.platforms.ray_executor.recipes import RayExecutorError, RunRecipe, max_actors, run_recipe, share
from unified.platforms.ray_executor.worker import ScoringWorker, WireGroup
from unified.redact import one_line, redact_url, url_secrets
from unified.run.executor import OnDone, TaskGroup

INSTALL_HINT = "executor='ray' needs Ray: pip install 'unified-rag-eval[ray]'"
MAX_ATTEMPTS = 3
BLOCKS_PER_ACTOR = 2
READY_TIMEOUT_S = 300.0
NODE_POLL_S = 1.0  # how often a replacement's wait asks whether the dead actor's node is gone
CONNECT_TIMEOUT_S = 10.0  # a cluster address must answer within this (or $UNIFIED_RAY_CONNECT_TIMEOUT)
# an HTTP/2 client preface and an empty SETTINGS frame: any gRPC server (Ray's GCS, its client
# server) answers with a SETTINGS frame at once; a dead address refuses, a wrong one stays silent
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_LOOPBACK = ("127.", "localhost", "::1", "[::1]")


class RayUnavailableError(ImportError):
    """``executor="ray"`` without the ``ray`` extra installed."""


def _local_only(address: str | None) -> bool:
    """True when the Ray to start or join is on this machine's loopback interface."""
    if address in (None, "", "local"):
        return not os.environ.get("RAY_ADDRESS")
    host = address.split("://")[-1]
    return host.startswith(_LOOPBACK)


def import_ray(address: str | None = None) -> Any:
    """``ray``, imported now; a missing extra is one line naming the pip install."""
    import importlib.util

    if "ray" not in sys.modules and importlib.util.find_spec("ray") is None:
        raise RayUnavailableError(INSTALL_HINT)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no telemetry, as for every framework
    if "ray" not in sys.modules and _local_only(address):
        # Ray binds its services to the machine's network address unless "clusters" are
        # off (its macOS/Windows default): a Ray for this machine only listens on 127.0.0.1
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    return ray


def connect(address: str | None = None, num_cpus: int | None = None) -> tuple[Any, bool]:
    """(ray, connected_here). An initialised Ray is used as it is; else ``address`` is
    joined ("auto", "host:port", "ray://..."; ``$RAY_ADDRESS`` when None) or, when None
    and unset, a local Ray with ``num_cpus`` (default: this machine's) is started."""
    ray = import_ray(address)
    if ray.is_initialized():
        return ray, False
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if target == "local":
        kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
    if target != "local":
        probe_cluster(target)
    main = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(address=target, **kwargs)
    except Exception as e:
        where = "start a local Ray" if target == "local" else f"join the Ray cluster at {redact_url(target)}"
        raise RayExecutorError(
            f"cannot {where}: {type(e).__name__}: {one_line(e, 240, secrets=url_secrets(target))}"
        ) from None
    finally:
        if main and sigterm is not None:  # ray.init replaces SIGTERM with sys.exit; the run's handler stays
            signal.signal(signal.SIGTERM, sigterm)
    return ray, True


def connect_timeout() -> float:
    """Seconds a cluster address gets to answer: ``$UNIFIED_RAY_CONNECT_TIMEOUT`` or 10."""
    try:
        value = float(os.environ.get("UNIFIED_RAY_CONNECT_TIMEOUT") or CONNECT_TIMEOUT_S)
    except ValueError:
        return CONNECT_TIMEOUT_S
    return value if value > 0 else CONNECT_TIMEOUT_S


def _host_port(target: str) -> tuple[str, int] | None:
    """(host, port) of ``host:port`` / ``ray://[user@]host:port``; None for what Ray
    resolves itself ("auto", an address without a port)."""
    rest = target.split("://", 1)[-1].rsplit("@", 1)[-1].split("/", 1)[0]
    host, colon, port = rest.rpartition(":")
    if not colon or not port.isdigit() or not host:
        return None
    return host.strip("[]"), int(port)


def probe_cluster(target: str, timeout: float | None = None) -> None:
    """A bounded look at a cluster address before ``ray.init`` (which retries a dead one
    for minutes): within ``timeout`` seconds (``connect_timeout``) the address must
    accept a TCP connection and answer an HTTP/2 preface as Ray's gRPC servers do.
    Raises ``RayExecutorError`` (one line, credentials masked) otherwise; does nothing
    for an address Ray resolves itself ("auto")."""
    where = _host_port(target)
    if where is None:
        return
    timeout = timeout or connect_timeout()
    shown = redact_url(target)
    try:
        with socket.create_connection(where, timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(_H2_PREFACE)
            head = s.recv(9)
    except OSError as e:
        timed_out = isinstance(e, TimeoutError)
        reason = f"nothing answered within {timeout:g} s" if timed_out else (e.strerror or type(e).__name__).lower()
        raise RayExecutorError(
            f"cannot join the Ray cluster at {shown}: {reason} (is the cluster up? `ray start --head` prints its address)"
        ) from None
    if len(head) < 4 or head[3] != 0x04:  # the first frame of a gRPC server is SETTINGS (type 4)
        raise RayExecutorError(
            f"cannot join the Ray cluster at {shown}: what answers there is not Ray "
            f"(no gRPC greeting within {timeout:g} s)"
        )


class Block:
    """Groups sent to one actor together, and which of them were delivered (exactly once)."""

    def __init__(self, groups: list[TaskGroup]):
        self.groups = groups
        self.received: set[int] = set()
        self.attempts = 0
        self.duplicates = 0

    def pending(self) -> list[WireGroup]:
        return [WireGroup.of(i, g) for i, g in enumerate(self.groups) if i not in self.received]

    def accept(self, idx: int) -> bool:
        """True the first time ``idx`` is delivered; False (and counted) after that."""
        if idx in self.received or not 0 <= idx < len(self.groups):
            self.duplicates += 1
            return False
        self.received.add(idx)
        return True

    def fail_pending(self, on_done: OnDone, why: str) -> int:
        """Error lines for every undelivered group; returns how many groups."""
        n = 0
        for w in self.pending():
            g = self.groups[w.idx]
            self.received.add(w.idx)
            on_done(g, g.failures(why))
            n += 1
        return n


class Pool:
    """``n`` actors with at most ``depth`` blocks in flight each; a dead one is replaced."""

    def __init__(
        self, ray: Any, recipe: RunRecipe, n: int, cpus: float, runtime_env: dict | None, depth: int = BLOCKS_PER_ACTOR
    ):
        self.ray, self.recipe, self.n, self.depth = ray, recipe, n, depth
        opts: dict[str, Any] = {"num_cpus": cpus, "max_restarts": 0, "max_task_retries": 0}
        if runtime_env:
            opts["runtime_env"] = runtime_env
        self._cls = ray.remote(ScoringWorker).options(**opts)
        self.actors: list[Any] = [None] * n
        self.info: list[dict[str, Any]] = [{} for _ in range(n)]
        self.load = [0] * n
        self.replaced = 0
        self.retired: set[int] = set()  # slots whose node died (no actor any more)
        self.lost_nodes: set[str] = set()
        self._freed = asyncio.Event()
        self._locks = [asyncio.Lock() for _ in range(n)]

    async def start(self) -> None:
        handles = [self._cls.remote(self.recipe, i, self.n) for i in range(self.n)]
        self.actors = handles
        await asyncio.gather(*(self._check(i, h) for i, h in enumerate(handles)))

    async def _check(self, i: int, handle: Any) -> None:
        from ray.exceptions import RayError

        try:
            info = await asyncio.wait_for(_awaitable(handle.ready.remote()), READY_TIMEOUT_S)
        except asyncio.TimeoutError:
            raise RayExecutorError(
                f"no Ray actor started within {READY_TIMEOUT_S:g}s: the cluster has no free "
                "CPU for it (ask for fewer actors, or free the cluster)"
            ) from None
        except RayError as e:  # e.g. unified-rag-eval not installed on that node
            raise RayExecutorError(f"a Ray actor could not start: {_first_line(e)}") from None
        if info.get("error"):
            raise RayExecutorError(info["error"])
        self.info[i] = info

    async def acquire(self) -> int:
        """The least-loaded live actor with room for one more block (waits until there is
        one); a ``RayExecutorError`` when every slot's node is gone."""
        while True:
            live = [j for j in range(self.n) if j not in self.retired]
            if not live:
                raise RayExecutorError(
                    "every Ray node that ran the run's actors died: the tasks not scored are left "
                    "for the next run (rerun the same command once the cluster is back)"
                )
            i = min(live, key=self.load.__getitem__)
            if self.load[i] < self.depth:
                self.load[i] += 1
                return i
            self._freed.clear()
            await self._freed.wait()

    def release(self, i: int) -> None:
        self.load[i] -= 1
        self._freed.set()

    def node_of(self, i: int) -> str:
        """The Ray node id of slot ``i``'s actor ("unknown" before it reported)."""
        return str(self.info[i].get("node_id") or "unknown")

    async def node_alive(self, node_id: str) -> bool:
        """What the cluster's GCS says of ``node_id`` now (``ray.nodes()``, a blocking call:
        in a thread). An id the GCS does not list is dead; an unanswered question, alive."""
        try:
            nodes = await asyncio.wait_for(asyncio.to_thread(self.ray.nodes), NODE_POLL_S * 10)
        except Exception:
            return True
        return any(n.get("NodeID") == node_id and n.get("Alive") for n in nodes)

    async def replace(self, i: int, dead: Any) -> bool:
        """A fresh actor in slot ``i`` (once, however many blocks saw ``dead`` die): True.
        False when the slot is retired: its node died and no replacement could be placed
        before the cluster said so (the slot's blocks go to the other actors)."""
        async with self._locks[i]:
            if i in self.retired:
                return False
            if self.actors[i] is not dead:
                return True
            with contextlib.suppress(Exception):
                self.ray.kill(dead)
            handle = self._cls.remote(self.recipe, i, self.n)
            self.actors[i] = handle
            self.replaced += 1
            if await self._ready_unless_node_lost(i, handle):
                return True
            self.retired.add(i)
            self.lost_nodes.add(self.node_of(i))
            self._freed.set()  # waiters re-choose among the live slots (or learn there are none)
            return False

    async def _ready_unless_node_lost(self, i: int, handle: Any) -> bool:
        """Wait for ``handle`` to be ready, asking every ``NODE_POLL_S`` whether the node of
        the actor it replaces is still alive. False (and ``handle`` killed) when that node
        died before the replacement was placed: on a cluster that lost a node the new actor
        may never find a free CPU, and waiting ``READY_TIMEOUT_S`` for it would stall the run."""
        node = self.info[i].get("node_id")
        ready = asyncio.create_task(self._check(i, handle))
        try:
            while True:
                done, _ = await asyncio.wait({ready}, timeout=NODE_POLL_S)
                if done and (ready.exception() is None or not node or await self.node_alive(node)):
                    ready.result()  # ready, or an error of an actor whose node lives: raised as before
                    return True
                if not done and (not node or await self.node_alive(node)):
                    continue
                ready.cancel()
                with contextlib.suppress(BaseException):
                    await ready
                with contextlib.suppress(Exception):
                    self.ray.kill(handle)
                return False
        except BaseException:
            ready.cancel()
            raise

    async def cpu_ms(self) -> int | None:
        """CPU milliseconds the live actors used since they were ready (None when one cannot say)."""
        try:
            live = [i for i in range(self.n) if i not in self.retired]
            got = await asyncio.wait_for(
                asyncio.gather(*(_awaitable(self.actors[i].cpu_seconds.remote()) for i in live)), 10
            )
        except Exception:
            return None
        if self.retired:  # the CPU of the actors on a lost node is unknown
            return None
        return round(sum(g - info.get("cpu_seconds", 0.0) for g, info in zip(got, self.info)) * 1000)

    def close(self) -> None:
        for a in self.actors:
            if a is not None:
                with contextlib.suppress(Exception):  # already dead, cluster gone
                    self.ray.kill(a)


async def _awaitable(ref: Any) -> Any:
    return await ref


class RayExecutor:
    """Score task groups on Ray actors (module docstring).

    ``address``: None (``$RAY_ADDRESS``, else a local Ray started for the run and shut
    down at its end), ``"auto"`` (the running cluster) or a cluster address.
    ``num_actors``: default one per CPU of the cluster, at most what the limits allow.
    ``block_size``: groups per block (default: an actor's share of the group window).
    ``runtime_env``: Ray's runtime_env for the actors (env vars, pip packages).
    """

    def __init__(
        self,
        address: str | None = None,
        num_actors: int | None = None,
        *,
        num_cpus: int | None = None,
        concurrency: int | None = None,
        block_size: int | None = None,
        runtime_env: dict[str, Any] | None = None,
    ):
        self.address, self.num_actors, self.num_cpus = address, num_actors, num_cpus
        self.concurrency, self.block_size, self.runtime_env = concurrency, block_size, runtime_env
        self.recipe: RunRecipe | None = None
        self.pool: Pool | None = None
        self.stats: dict[str, Any] = {}  # counts, and actor_cpu_ms (None when unknown)

    def bind(self, backends: Sequence[Any], concurrency: int) -> None:
        """Learn the run's backends (with their judges) and its group window; a run that
        cannot be shipped fails here, before anything is scored."""
        ray = import_ray(self.address)
        target = self.address or os.environ.get("RAY_ADDRESS")
        if target and target != "local" and not ray.is_initialized():
            probe_cluster(target)  # a dead address is one line now, before the run folder is touched
        self.recipe = run_recipe(backends, self.concurrency or concurrency)

    @property
    def actors(self) -> list[Any]:
        """The live actor handles (tests kill one of them)."""
        return list(self.pool.actors) if self.pool is not None else []

    async def run(self, groups: Iterable[TaskGroup], on_done: OnDone) -> None:
        if self.recipe is None:
            raise RayExecutorError(
                "RayExecutor.run before bind(backends, concurrency): pass it to "
                "evaluate(executor=...) or call bind first"
            )
        ray, connected = connect(self.address, self.num_cpus)
        try:
            self.pool = self._pool(ray)
            self.stats = {
                "actors": self.pool.n,
                "blocks": 0,
                "deaths": 0,
                "resent_groups": 0,
                "duplicates_dropped": 0,
                "failed_groups": 0,
                "tasks_by_node": {},
                "nodes_lost": [],
            }
            started = time.perf_counter()
            await self.pool.start()
            self.stats["start_ms"] = round((time.perf_counter() - started) * 1000)
            await self._drive(groups, on_done)
            self.stats["actor_cpu_ms"] = await self.pool.cpu_ms()
        finally:
            if self.pool is not None:
                self.stats["replaced"] = self.pool.replaced
                self.pool.close()
            if connected:
                ray.shutdown()

    def _pool(self, ray: Any) -> Pool:
        assert self.recipe is not None
        cpus = float(ray.available_resources().get("CPU") or ray.cluster_resources().get("CPU") or 1)
        n = self.num_actors or max(1, int(cpus))
        n = max(1, min(n, max_actors(self.recipe)))
        per_actor = min(1.0, cpus / n) if cpus >= 0.01 else 1.0
        return Pool(ray, self.recipe, n, per_actor, self.runtime_env)

    def _blocks(self, groups: Iterable[TaskGroup]) -> Iterator[Block]:
        assert self.recipe is not None and self.pool is not None
        size = self.block_size or max(1, share(self.recipe.concurrency, self.pool.n, self.pool.n - 1))
        buf: list[TaskGroup] = []
        for g in groups:
            buf.append(g)
            if len(buf) >= size:
                yield Block(buf)
                buf = []
        if buf:
            yield Block(buf)

    async def _drive(self, groups: Iterable[TaskGroup], on_done: OnDone) -> None:
        """Dispatch blocks as actors have room; a failed block (a write error) stops the run."""
        assert self.pool is not None
        tasks: set[asyncio.Task] = set()
        try:
            for block in self._blocks(groups):
                i = await self.pool.acquire()
                _reap(tasks)
                tasks.add(asyncio.create_task(self._score(i, block, on_done)))
                self.stats["blocks"] += 1
            while tasks:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                _reap(tasks)
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _score(self, i: int, block: Block, on_done: OnDone) -> None:
        """Deliver every group of ``block`` once, resending what a dying actor left undone
        (to its replacement, or, when its node died, to another actor)."""
        assert self.pool is not None
        try:
            while True:
                pending = block.pending()
                if not pending:
                    return
                if block.attempts:
                    self.stats["resent_groups"] += len(pending)
                actor = self.pool.actors[i]
                error = await self._stream(i, actor, pending, block, on_done)
                if error is None and not block.pending():
                    return
                block.attempts += 1
                why = error or "the actor ended the block without scoring every group"
                if block.attempts >= MAX_ATTEMPTS:
                    self.stats["failed_groups"] += block.fail_pending(
                        on_done,
                        f"ray: gave up on this task after {block.attempts} failed attempts "
                        f"(last: {why}); rerun with --retry-errors",
                    )
                    return
                if error is not None:
                    self.stats["deaths"] += 1
                    if not await self.pool.replace(i, actor):
                        self._node_lost(i)
                        self.pool.release(i)
                        i = -1  # holds no slot while it waits for one
                        i = await self.pool.acquire()
        finally:
            self.stats["duplicates_dropped"] += block.duplicates
            block.duplicates = 0
            if i >= 0:
                self.pool.release(i)

    def _node_lost(self, i: int) -> None:
        """Say once per node, on stderr and in the stats, that a node died mid-run."""
        assert self.pool is not None
        node = self.pool.node_of(i)
        if node in self.stats["nodes_lost"]:
            return
        self.stats["nodes_lost"].append(node)
        live = self.pool.n - len(self.pool.retired)
        print(
            f"warning: ray: node {node} ({self.pool.info[i].get('node', '?')}) died mid-run; its unfinished "
            f"tasks are scored again on the {live} actor(s) left (each task still written once)",
            file=sys.stderr,
            flush=True,
        )

    async def _stream(self, i: int, actor: Any, pending: list[WireGroup], block: Block, on_done: OnDone) -> str | None:
        """Consume one attempt's result stream; None when it ended, else why it broke."""
        from ray.exceptions import RayError

        assert self.pool is not None
        by_node = self.stats["tasks_by_node"]
        node = self.pool.node_of(i)
        try:
            async for ref in actor.score_block.remote(pending):
                batch, records = await ref
                for rec in records:  # the driver's listeners (progress, call counts) see every call
                    record_call(rec)
                for idx, scores in batch:
                    if block.accept(idx):
                        on_done(block.groups[idx], scores)
                        by_node[node] = by_node.get(node, 0) + len(scores)
        except RayError as e:
            return _first_line(e)
        return None

    def summary(self) -> dict[str, Any]:
        """What ``summary.json`` records of this executor (key ``executor``): the actors,
        the tasks each Ray node scored in this invocation (``tasks_by_node``, by node id),
        the nodes lost mid-run, deaths, resends and duplicates dropped."""
        keys = ("actors", "tasks_by_node", "nodes_lost", "deaths", "replaced", "resent_groups")
        more = ("duplicates_dropped", "failed_groups", "blocks")
        out: dict[str, Any] = {"name": "ray"}
        out.update({k: self.stats[k] for k in keys + more if k in self.stats})
        if self.pool is not None:
            out["nodes"] = {self.pool.node_of(i): self.pool.info[i].get("node") for i in range(self.pool.n)}
        return out


def _first_line(e: BaseException) -> str:
    """Ray's errors span many lines (ids, addresses, tracebacks): the type and the first."""
    text = str(e).strip()
    return f"{type(e).__name__}: {one_line(text.splitlines()[0] if text else '', 200)}"


def _reap(tasks: set[asyncio.Task]) -> None:
    """Forget finished block tasks; re-raise the first failure."""
    for t in [t for t in tasks if t.done()]:
        tasks.discard(t)
        t.result()
