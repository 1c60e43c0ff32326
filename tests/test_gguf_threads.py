"""An in-process model generates on every physical core (unified.judge.budget.gguf_threads):
llama-cpp-python's default, half the logical CPUs, generated on one of two cores here."""

from __future__ import annotations

import pytest

from unified.judge import JudgeConfig, budget


@pytest.mark.parametrize(
    "cpus,siblings,want",
    [
        ({0, 1}, "0\n", (2, 2)),  # 2 cores, no SMT: both generate
        ({0, 1, 2, 3}, "0,2\n", (2, 4)),  # 2 cores × 2 threads: one per core, prompts on all 4
        ({0, 1, 2, 3, 4, 5, 6, 7}, "0-1\n", (4, 8)),
        ({3}, "3\n", (1, 1)),  # pinned to one CPU
    ],
)
def test_threads_follow_the_affinity_and_the_cores(monkeypatch, tmp_path, cpus, siblings, want):
    f = tmp_path / "thread_siblings_list"
    f.write_text(siblings)
    monkeypatch.setattr(budget, "_SIBLINGS", f)
    monkeypatch.setattr(budget.os, "sched_getaffinity", lambda _pid: cpus)
    assert budget.gguf_threads(JudgeConfig(model="/m/q.gguf")) == want


def test_a_set_value_wins_and_unknown_topology_counts_one_thread_per_core(monkeypatch, tmp_path):
    monkeypatch.setattr(budget, "_SIBLINGS", tmp_path / "absent")
    monkeypatch.setattr(budget.os, "sched_getaffinity", lambda _pid: {0, 1, 2})
    assert budget.gguf_threads(JudgeConfig(model="/m/q.gguf")) == (3, 3)
    assert budget.gguf_threads(JudgeConfig(model="/m/q.gguf", n_threads=1)) == (1, 3)
    with pytest.raises(ValueError):
        JudgeConfig(model="/m/q.gguf", n_threads=0)
