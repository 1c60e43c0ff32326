"""Same output check: does this tree write what another tree (today's main) writes?

A speed change to the run path must not change a byte of what a run leaves behind. This
script runs the CLI (``unified-eval run INPUT -m precision@5,ndcg@10``) with the code of
two trees on the same hostile input, in four steps, each into the same folder state for
both trees:

1. a first run into an empty folder;
2. the same command again (the no-op rerun);
3. a resume from the state a kill -9 leaves: the finished folder's ``scores.jsonl`` cut to
   its first third plus half a line, its derived files (index.json, scores.parquet,
   summary.json, report.html) removed — the same cut for both trees, so the resume is
   deterministic;
4. a changed input: 40 rows edited and the last 25 removed (stale lines dropped, changed
   samples rescored, compaction).

The input: ``--n`` rows (1,500) with odd ids (spaces, unicode, NFC/NFD twins, an id that
looks like a row error's), missing fields (no ``relevant_ids``, no ``retrieved_ids``),
unicode texts, rows that are not JSON, a repeated id with other content, repeated rows,
and an empty ranking.

After each step it compares ``scores.jsonl`` (bytes), ``summary.json`` without
``timings``, stdout without the wall seconds, stderr, ``report.html`` without the
generation time, the run's wall and the plots' SVG date, ``index.json``'s key and
aggregates, ``scores.parquet``'s rows, and the exit code. Prints each difference; exits 1
if there is one.

    python benchmarks/same_output.py --against /work/main [--n 1500]
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
METRICS = "precision@5,ndcg@10"

_CLI = "import sys; sys.path.insert(0, {tree!r}); sys.argv = ['unified-eval'] + {args!r}; from unified.cli import app; app()"


def hostile_rows(n: int, seed: int = 5) -> list[str]:
    """JSONL lines: ordinary rows with the odd ones in between (module docstring)."""
    rng = random.Random(seed)
    lines: list[str] = []
    for i in range(n):
        docs = [f"d{rng.randrange(60)}" for _ in range(rng.randint(0, 12))]
        row: dict[str, Any] = {
            "id": f"s{i:05d}",
            "user_input": f"Wie funktioniert Ümlaut {i}? 東京 🚀",
            "response": "It works.",
            "retrieved_ids": docs,
            "relevant_ids": rng.sample(docs, k=min(len(docs), rng.randint(0, 3))) or ["d999"],
        }
        kind = i % 37
        if kind == 3:
            del row["relevant_ids"]  # a missing field: a failure line per metric
        elif kind == 5:
            del row["retrieved_ids"]
        elif kind == 7:
            row["id"] = f"id with spaces {i} \u00e9"  # NFC
        elif kind == 8:
            row["id"] = f"id with spaces {i - 1} e\u0301"  # its NFD twin: a repeated id
        elif kind == 11:
            lines.append("{not json at all")
            continue
        elif kind == 13:
            row["id"] = f"row:{i}"  # looks like a row error's id
        elif kind == 17 and lines:
            lines.append(lines[-1])  # a repeated row
            continue
        elif kind == 19:
            row["id"] = "s00000"  # a repeated id with other content
        elif kind == 23:
            row["retrieved_ids"] = []
        lines.append(json.dumps(row, ensure_ascii=bool(i % 2)))
    return lines


def python_of(tree: Path) -> str:
    """The tree's own venv python when it has one: an editable install maps
    ``unified.adapters`` to the tree it was installed from, whatever ``sys.path`` says,
    so another tree's run through this venv would mix the two trees' code."""
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def run_cli(tree: Path, args: list[str], cwd: Path) -> tuple[int, str, str]:
    code = _CLI.format(tree=str(tree), args=args)
    r = subprocess.run([python_of(tree), "-c", code], capture_output=True, text=True, cwd=str(cwd))
    return r.returncode, r.stdout, r.stderr


def _clean_text(text: str, folder: Path) -> str:
    text = text.replace(str(folder), "<OUT>")
    text = re.sub(r"wall \d+(\.\d+)?s", "wall Xs", text)
    # the table's title is centred on its wall time: only that line's padding is dropped, so a
    # change in the table's own alignment still shows
    text = re.sub(r"^ +(.*wall Xs) *$", r"\1", text, flags=re.M)
    text = re.sub(r"^progress: .*\n", "", text, flags=re.M)  # the periodic lines come every 10 s of wall
    return re.sub(r"\d+(\.\d+)? ?s\b", "Xs", text) if "nothing to do" in text else text


def _html(path: Path) -> str:
    if not path.exists():
        return "<absent>"
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"generated \d{4}-\d\d-\d\dT[\d:+]+", "generated X", text)
    text = re.sub(r"<dc:date>[^<]*</dc:date>", "", text)
    return re.sub(r"run time \d+(\.\d+)? s", "run time X", text)


def _summary(path: Path) -> Any:
    if not path.exists():
        return "<absent>"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("timings", None)
    return data


def _index(path: Path) -> Any:
    if not path.exists():
        return "<absent>"
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: data.get(k) for k in ("key", "aggregates")}


def _parquet(path: Path) -> Any:
    if not path.exists():
        return "<absent>"
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def snapshot(folder: Path, rc: int, out: str, err: str) -> dict[str, Any]:
    """What one step left behind, with the parts that may differ (times, paths) masked."""
    scores = folder / "scores.jsonl"
    return {
        "exit code": rc,
        "stdout": _clean_text(out, folder),
        "stderr": _clean_text(err, folder),
        "scores.jsonl": scores.read_bytes() if scores.exists() else b"<absent>",
        "summary.json": _summary(folder / "summary.json"),
        "report.html": _html(folder / "report.html"),
        "index.json": _index(folder / "index.json"),
        "scores.parquet": _parquet(folder / "scores.parquet"),
    }


def cut_like_kill9(folder: Path) -> None:
    """The state a kill -9 mid-run leaves: a third of the lines, a torn last line, no
    derived files (a run removes them before it changes the folder)."""
    scores = folder / "scores.jsonl"
    lines = scores.read_bytes().splitlines(keepends=True)
    keep = lines[: len(lines) // 3]
    scores.write_bytes(b"".join(keep) + lines[len(keep)][: len(lines[len(keep)]) // 2])
    for name in ("index.json", "scores.parquet", "summary.json", "report.html"):
        (folder / name).unlink(missing_ok=True)


def change_input(src: Path, dst: Path) -> None:
    lines = src.read_text(encoding="utf-8").splitlines()[:-25]
    for i in range(0, len(lines), max(1, len(lines) // 40)):
        try:
            row = json.loads(lines[i])
        except json.JSONDecodeError:
            continue
        row["retrieved_ids"] = list(reversed(row.get("retrieved_ids") or [])) + ["dX"]
        lines[i] = json.dumps(row)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", type=Path, required=True, help="the other tree (e.g. /work/main)")
    ap.add_argument("--this", type=Path, default=ROOT, help="this tree (default: the one holding this script)")
    ap.add_argument("--n", type=int, default=1500, help="input rows")
    args = ap.parse_args()
    trees = {"this": args.this.resolve(), "other": args.against.resolve()}
    work = Path(tempfile.mkdtemp(prefix="same_output_"))
    data = work / "hostile.jsonl"
    data.write_text("\n".join(hostile_rows(args.n)) + "\n", encoding="utf-8")
    changed = work / "changed.jsonl"
    change_input(data, changed)
    steps = [("first run", data, None), ("rerun", data, None), ("resume after kill -9", data, cut_like_kill9)]
    steps.append(("changed input", changed, None))
    differences = 0
    for name, src, before in steps:
        got = {}
        for label, tree in trees.items():
            # each tree's folder is moved to the one path for its run: paths in the outputs agree
            folder, kept = work / "out", work / f"out_{label}"
            if kept.exists():
                kept.rename(folder)
            if before is not None:
                before(folder)
            rc, out, err = run_cli(tree, ["run", str(src), "-m", METRICS, "--out", str(folder)], work)
            got[label] = snapshot(folder, rc, out, err)
            folder.rename(kept)
        for part in got["this"]:
            same = got["this"][part] == got["other"][part]
            differences += not same
            print(f"{name:22s} {part:15s} {'same' if same else 'DIFFERENT'}")
            if not same and isinstance(got["this"][part], str):
                for line in list(
                    difflib.unified_diff(
                        got["other"][part].splitlines(), got["this"][part].splitlines(), lineterm="", n=0
                    )
                )[2:8]:
                    print(f"    {line[:200]}")
    print(f"{differences} difference(s); folders in {work}")
    if differences == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
