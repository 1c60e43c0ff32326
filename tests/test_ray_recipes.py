"""The Ray executor's parts that need no Ray session: limits divided among actors, the
exactly-once ledger of a block, what can and cannot be shipped to an actor, the one-line
message for a missing extra, and the CLI flags. Fast; the end-to-end runs are in
tests/test_ray_executor.py."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest

from unified.judge import JudgeConfig, build_judges
from unified.judge.base import ChatJudge, Judges
from unified.metrics import parse_metric
from unified.platforms.ray_executor import (
    INSTALL_HINT,
    Block,
    RayExecutorError,
    RayUnavailableError,
    divided,
    import_ray,
    max_actors,
    run_recipe,
    share,
)
from unified.run.executor import Pair, TaskGroup
from unified.sample import Sample

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(
    not HAS_RAY, reason="the ray extra is not installed: pip install 'unified-rag-eval[ray]'"
)


# ---------------------------------------------------------------- limits


@pytest.mark.parametrize("total,n", [(16, 2), (7, 2), (5, 3), (3, 3), (1, 1), (33, 8)])
def test_shares_sum_to_the_total_and_differ_by_at_most_one(total, n):
    parts = [share(total, n, i) for i in range(n)]
    assert sum(parts) == total
    assert max(parts) - min(parts) <= 1 and min(parts) >= 1


def test_judge_limits_are_divided_not_copied():
    cfg = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", concurrency=5, requests_per_minute=600)
    parts = [divided(cfg, 2, i) for i in range(2)]
    assert [p.concurrency for p in parts] == [3, 2]
    assert [p.requests_per_minute for p in parts] == [300, 300]
    assert all(p.model == "m" and p.temperature == cfg.temperature for p in parts)  # answers unchanged


def test_actor_count_is_capped_by_the_smallest_remote_limit():
    judges = build_judges(JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1", concurrency=3), cache=False)
    from unified.adapters import get_backend

    backend = get_backend("native", judges)
    if not HAS_RAY:
        pytest.skip("recipes pickle with ray.cloudpickle")
    assert max_actors(run_recipe([backend], concurrency=16)) == 3
    assert max_actors(run_recipe([backend], concurrency=2)) == 2


# ---------------------------------------------------------------- exactly once


def _groups(n: int) -> list[TaskGroup]:
    ref = parse_metric("precision@3")
    backend = type("B", (), {"name": "native"})()
    return [
        TaskGroup(
            sample=Sample(id=f"s{i}", user_input="q", retrieved_ids=["a"], relevant_ids=["a"]),
            backend=backend,
            pairs=[Pair(ref, backend, 0, "cfg", False)],
            sample_hash=f"h{i}",
        )
        for i in range(n)
    ]


def test_a_block_delivers_each_group_once_whatever_arrives():
    block = Block(_groups(4))
    got = [i for i in (0, 2, 0, 2, 3, 7, -1) if block.accept(i)]  # a replay repeats 0 and 2
    assert got == [0, 2, 3]
    assert block.duplicates == 4
    assert [w.idx for w in block.pending()] == [1]  # only the group never delivered goes again


def test_a_block_that_gives_up_writes_one_error_line_per_undelivered_task():
    block = Block(_groups(3))
    block.accept(1)
    lines: list[tuple[str, list]] = []
    assert block.fail_pending(lambda g, scores: lines.append((g.sample.id, scores)), "ray: gave up") == 2
    assert [sid for sid, _ in lines] == ["s0", "s2"]
    assert all(
        s.error == "ray: gave up" and s.sample_hash and s.config_hash == "cfg" for _, scores in lines for s in scores
    )
    assert block.pending() == [] and block.fail_pending(lambda g, s: lines.append(g), "again") == 0


# ---------------------------------------------------------------- what can be shipped


class _Unpicklable(ChatJudge):
    model = "own"

    def __init__(self) -> None:
        self.lock = threading.Lock()

    async def ask(self, messages, schema, **params):  # pragma: no cover - never called
        raise NotImplementedError


@needs_ray
def test_a_judge_that_cannot_be_shipped_is_one_line_naming_it_and_the_way_out():
    from unified.adapters import get_backend

    backend = get_backend("native", Judges(chat=_Unpicklable()))
    with pytest.raises(RayExecutorError) as e:
        run_recipe([backend], concurrency=4)
    msg = str(e.value)
    assert "\n" not in msg
    assert "cannot ship judges.chat (_Unpicklable)" in msg and "executor='local'" in msg


@needs_ray
def test_configured_judges_are_rebuilt_from_config_and_share_one_bundle(tmp_path):
    from unified.adapters import get_backend

    cfg = JudgeConfig(model="m", base_url="http://127.0.0.1:9/v1")
    judges = build_judges(cfg, cfg.model_copy(update={"model": "m2"}), cache_path=tmp_path / "c.sqlite")
    recipe = run_recipe([get_backend("native", judges), get_backend("embedding", judges)], concurrency=4)
    assert len(recipe.judges) == 1 and [b.judges for b in recipe.backends] == [0, 0]
    j = recipe.judges[0]
    assert j.chat.config == cfg and j.chat2.config.model == "m2" and j.chat.pickled is None
    assert Path(j.cache.path) == tmp_path / "c.sqlite"


def test_missing_extra_is_one_line_naming_the_pip_install(monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else object())
    with pytest.raises(RayUnavailableError) as e:
        import_ray()
    assert str(e.value) == INSTALL_HINT == "executor='ray' needs Ray: pip install 'unified-rag-eval[ray]'"
    assert isinstance(e.value, ImportError)  # the CLI prints ImportErrors as one line, exit 2


def test_evaluate_without_the_extra_fails_before_scoring(monkeypatch, tmp_path):
    import sys

    from unified.api import evaluate

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    data = [{"id": "a", "user_input": "q", "retrieved_ids": ["x"], "relevant_ids": ["x"]}]
    with pytest.raises(RayUnavailableError):
        evaluate(data, "precision@3", out=tmp_path / "run", executor="ray", quiet=True)
    assert not (tmp_path / "run" / "scores.jsonl").exists()  # refused before the run folder is touched


def test_unknown_executor_is_refused(tmp_path):
    from unified.api import evaluate

    data = [{"id": "a", "user_input": "q", "retrieved_ids": ["x"], "relevant_ids": ["x"]}]
    with pytest.raises(ValueError, match="unknown executor 'spark'; choose local or ray"):
        evaluate(data, "precision@3", out=tmp_path / "run", executor="spark", quiet=True)


def test_run_and_compare_take_executor_flags():
    from unified.cli.run import flag_names

    for command in ("run", "compare"):
        assert {"executor", "ray_address"} <= set(flag_names(command))
