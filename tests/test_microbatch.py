"""The local model's micro-batcher and parallel encodes (issue 27, speed): concurrent
requests are merged into one call, each gets its own results in its own order, a failing
request does not take the others down, the vector cache is still hit, and a batched
vector equals the one-request-per-call vector up to float noise (< 1e-6)."""

import asyncio
import threading
import time

import numpy as np
import pytest

from unified.judge.microbatch import MicroBatcher


class SlowFn:
    """Returns ``text.upper()`` per text after a short sleep (so requests queue up behind a
    busy worker); records every call's texts and the most calls seen running at once; fails
    any call that contains ``BAD``."""

    def __init__(self, delay: float = 0.05):
        self.delay, self.calls, self.running, self.most = delay, [], 0, 0
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[str]:
        with self.lock:
            self.calls.append(list(texts))
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.delay)
            if "BAD" in texts:
                raise RuntimeError("cannot encode BAD")
            return [t.upper() for t in texts]
        finally:
            with self.lock:
                self.running -= 1


async def _many(batcher: MicroBatcher, requests: list[list[str]]) -> list:
    """The first request alone, then (while its call runs) all the others at once."""
    first = asyncio.ensure_future(batcher.run(requests[0]))
    await asyncio.sleep(0.01)
    rest = await asyncio.gather(*(batcher.run(r) for r in requests[1:]), return_exceptions=True)
    return [await first, *rest]


def test_each_request_gets_its_own_results_in_order_from_merged_calls():
    fn = SlowFn()
    batcher = MicroBatcher(fn, workers=1)
    requests = [[f"s{i} b", "shared", f"s{i} a"] for i in range(12)] + [["shared"], ["z", "y", "z"]]
    got = asyncio.run(_many(batcher, requests))
    assert got == [[t.upper() for t in r] for r in requests]
    # the first request starts alone; the rest waited behind it and went in one call
    assert len(fn.calls) == 2 and fn.calls[0] == requests[0]
    assert batcher.requests == len(requests)
    # each call sees each distinct text once
    assert all(len(c) == len(set(c)) for c in fn.calls)


def test_a_failing_request_does_not_lose_the_others():
    fn = SlowFn()
    batcher = MicroBatcher(fn, workers=1)
    requests = [["first"], ["a", "b"], ["c", "BAD"], ["d"], ["b", "e"]]
    got = asyncio.run(_many(batcher, requests))
    assert isinstance(got[2], RuntimeError) and "BAD" in str(got[2])
    for r, g in zip(requests, got, strict=True):
        if "BAD" not in r:
            assert g == [t.upper() for t in r]
    # the merged call failed, then each of its requests was retried alone
    assert ["a", "b", "c", "BAD", "d", "e"] in fn.calls and ["d"] in fn.calls


def test_at_most_workers_calls_at_once_and_a_new_loop_starts_fresh():
    fn = SlowFn(delay=0.2)  # long enough that the two workers overlap on a loaded machine (0.02 did not)
    batcher = MicroBatcher(fn, workers=2, max_texts=2)
    requests = [[f"t{i}", f"u{i}"] for i in range(10)]
    assert asyncio.run(_many(batcher, requests)) == [[t.upper() for t in r] for r in requests]
    assert fn.most == 2  # two workers, and max_texts=2 keeps one request per call
    assert asyncio.run(batcher.run(["again"])) == ["AGAIN"]  # a second asyncio.run
    assert asyncio.run(batcher.run([])) == []


# ---------------------------------------------------------------- the real local model


def _count_encodes(monkeypatch, model, delay: float = 0.0) -> list[str]:
    """Wrap the model's ``encode``: the texts it was given, in order (each call waits ``delay`` s)."""
    seen: list[str] = []
    real_encode = model.encode

    def counting(batch, **kw):
        seen.extend(batch)
        time.sleep(delay)
        return real_encode(batch, **kw)

    monkeypatch.setattr(model, "encode", counting)
    return seen


@pytest.mark.local
def test_batched_vectors_equal_one_call_per_request_and_the_cache_is_hit(monkeypatch):
    from unified.judge import minilm as L

    texts = [
        ["Offline changes sync within 30 seconds of reconnecting.", "How fast do offline changes sync?"],
        ["Deleted notes stay in the trash for 30 days.", "After that they are removed for good."],
        ["Attachments over 50 MB download on demand, and smaller ones sync at once with the note."],
        ["How fast do offline changes sync?", "Thirty days."],
    ]
    L.clear_vector_cache()
    alone = {t: L.encode_both([t])[0] for r in texts for t in r}  # one text per forward pass
    L.clear_vector_cache()
    seen = _count_encodes(monkeypatch, L.get_sentence_model())
    emb = L.LocalEmbedder()

    async def concurrent():
        return await asyncio.gather(*(emb.embed(r) for r in texts))

    got = asyncio.run(concurrent())
    for r, vectors in zip(texts, got):
        for t, v in zip(r, vectors):
            # equal up to float noise: a batch's shape picks the kernel's summation order
            assert np.abs(np.asarray(v, dtype=np.float32) - alone[t][0]).max() < 1e-6, t
    assert sorted(seen) == sorted({t for r in texts for t in r})  # every distinct text once
    # a later request for the same texts (the faithfulness token vectors) is a cache hit
    seen.clear()
    pairs = L.encode_both([t for r in texts for t in r])
    assert seen == []
    assert all(np.abs(p[1] - alone[t][1]).max() < 1e-6 for p, t in zip(pairs, [t for r in texts for t in r]))


@pytest.mark.local
def test_concurrent_encodes_of_the_same_text_run_the_model_once(monkeypatch):
    from unified.judge import minilm as L

    L.clear_vector_cache()
    # the second thread arrives while the first one's text is in flight
    seen = _count_encodes(monkeypatch, L.get_sentence_model(), delay=0.2)
    text = "A context sentence that two samples retrieved at the same time."
    out: list = [None, None]
    threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, L.encode_both([text]))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [text]
    assert np.array_equal(out[0][0][0], out[1][0][0])


@pytest.mark.local
def test_a_failed_encode_lets_the_waiting_caller_encode_the_text_itself(monkeypatch):
    from unified.judge import minilm as L

    L.clear_vector_cache()
    model = L.get_sentence_model()
    real_encode = model.encode
    calls: list[list[str]] = []
    started = threading.Event()

    def first_fails(batch, **kw):
        calls.append(list(batch))
        if len(calls) == 1:
            started.set()
            time.sleep(0.3)  # the second caller finds the text in flight
            raise RuntimeError("out of memory")
        return real_encode(batch, **kw)

    monkeypatch.setattr(model, "encode", first_fails)
    text = "A sentence whose first encode fails."
    errors: list[BaseException] = []
    out: list = []

    def first() -> None:
        try:
            L.encode_both([text])
        except RuntimeError as e:
            errors.append(e)

    t1 = threading.Thread(target=first)
    t1.start()
    assert started.wait(30)
    out.append(L.encode_both([text, "and another"]))
    t1.join()
    assert [str(e) for e in errors] == ["out of memory"]
    assert len(out[0]) == 2 and out[0][0][0].shape == (384,)
    assert calls[0] == [text] and [text] in calls[1:]  # encoded again by the waiting caller
    assert L._inflight == {}


@pytest.mark.local
def test_an_encode_is_cut_into_passes_by_length_on_the_pass_threads(monkeypatch):
    from unified.judge import minilm as L

    short = [f"Plan {i} keeps notes for {i} days." for i in range(12)]
    long = [
        "When the same note is edited on two devices before either of them syncs, both versions are kept: "
        f"the later edit becomes the main note and the earlier one is saved as conflicted copy number {i}."
        for i in range(3)
    ]
    L.clear_vector_cache()
    alone = {t: L.encode_both([t])[0] for t in short + long}
    L.clear_vector_cache()
    model = L.get_sentence_model()
    real_encode = model.encode
    passes: list[tuple[list[str], str]] = []

    def recording(batch, **kw):
        passes.append((list(batch), threading.current_thread().name))
        return real_encode(batch, **kw)

    monkeypatch.setattr(model, "encode", recording)
    got = L.encode_both(long[:1] + short + long[1:])
    # the short sentences are not padded to the long ones' length: separate passes
    assert sorted(t for b, _ in passes for t in b) == sorted(short + long)  # each text once
    assert not any(set(b) & set(short) and set(b) & set(long) for b, _ in passes)
    assert all(name.startswith("unified-encode") for _, name in passes)
    for t, (sent, tok) in zip(long[:1] + short + long[1:], got):
        assert np.abs(sent - alone[t][0]).max() < 1e-6 and np.abs(tok - alone[t][1]).max() < 1e-6


@pytest.mark.local
def test_a_child_forked_after_an_encode_encodes_instead_of_waiting_for_the_parents_threads():
    """A forked child has none of the parent's pass threads: without the fork handler its
    first pass waits forever on the inherited pool (a multiprocessing worker would hang)."""
    import os
    import signal

    from unified.judge import minilm as L

    L.encode_both(["The parent starts the pass threads."])  # the pool and its threads exist
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: encode a new text, report its vector's length, leave
        try:
            os.close(read)
            sent, _ = L.encode_both(["A text the child encodes itself after the fork."])[0]
            os.write(write, str(len(sent)).encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 120
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    answer = os.read(read, 64).decode()
    os.close(read)
    assert done[0] == pid, "the forked child hung on the parent's encode threads"
    assert answer == "384"
