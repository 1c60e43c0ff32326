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
aggregates, ``scores.parquet``'s rows, and the exit code. Prints each difference (for
``scores.jsonl``, the tasks whose lines differ: value and calls in each tree); exits 1
if there is one.

    python benchmarks/same_output.py --against /work/main [--n 1500]

Judged metrics: ``--judge`` starts the loopback judge (``tests/judge_server.py``, whose
answers are a pure function of the request, with the frameworks' answer modules) and
runs with ``--base-url``/``--embedding`` on it and ``--no-cache``, so every request
reaches it; the seconds judge calls took (``cost.seconds``, busy-s, task seconds) are
masked, and score lines and Parquet rows are compared sorted (tasks finish in an order
of their own). ``--input FILE`` scores a file of your own instead of the hostile rows (they
have no contexts to judge), ``--metrics`` other metrics, e.g.

    python benchmarks/same_output.py --against /tmp/before --judge \
        --input examples/data/rag_examples.jsonl \
        --metrics faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

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


_SECONDS = re.compile(rb'"seconds":[-+0-9.eE]+')
_BUSY_CELL = re.compile(r"(\d+(?:\.\d+)?)( │)$")  # the table's last column, busy-s


def _no_seconds(obj: Any) -> Any:
    """``obj`` with every ``seconds`` (a judge call's time) set to 0, in JSON text too
    (scores.parquet keeps ``cost`` as a JSON string)."""
    if isinstance(obj, dict):
        return {k: 0 if k == "seconds" else _no_seconds(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_no_seconds(v) for v in obj]
    if isinstance(obj, str) and '"seconds":' in obj:
        return _SECONDS.sub(b'"seconds":0', obj.encode()).decode()
    return obj


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
    if "busy-s" in text:  # judge calls' seconds, right-aligned in a column as wide as its header
        text = "\n".join(_BUSY_CELL.sub(lambda m: "X".rjust(len(m[1])) + m[2], line) for line in text.split("\n"))
    return re.sub(r"\d+(\.\d+)? ?s\b", "Xs", text) if "nothing to do" in text else text


def _html(path: Path) -> str:
    if not path.exists():
        return "<absent>"
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"generated \d{4}-\d\d-\d\dT[\d:+]+", "generated X", text)
    text = re.sub(r"<dc:date>[^<]*</dc:date>", "", text)
    # the spend table's task seconds: the time judge calls took
    text = re.sub(
        r"<th>task seconds</th></tr>.*?</table>",
        lambda m: re.sub(r"<td class='num'>[\d.]+</td></tr>", "<td class='num'>X</td></tr>", m[0]),
        text,
        flags=re.S,
    )
    return re.sub(r"run time \d+(\.\d+)? s", "run time X", text)


def _summary(path: Path) -> Any:
    if not path.exists():
        return "<absent>"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("timings", None)
    return _no_seconds(data)


def _index(path: Path) -> Any:
    if not path.exists():
        return "<absent>"
    data = json.loads(path.read_text(encoding="utf-8"))
    return _no_seconds({k: data.get(k) for k in ("key", "aggregates")})


def _parquet(path: Path, ordered: bool) -> Any:
    if not path.exists():
        return "<absent>"
    import pyarrow.parquet as pq

    rows = _no_seconds(pq.read_table(path).to_pylist())
    return rows if ordered else sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _scores(path: Path, ordered: bool) -> bytes:
    if not path.exists():
        return b"<absent>"
    data = _SECONDS.sub(b'"seconds":0', path.read_bytes())
    return data if ordered else b"".join(sorted(data.splitlines(keepends=True)))


def snapshot(folder: Path, rc: int, out: str, err: str, ordered: bool = True) -> dict[str, Any]:
    """What one step left behind, with the parts that may differ (times, paths) masked;
    not ``ordered``: score lines and rows compared sorted (with judge calls, tasks finish
    in an order of their own)."""
    return {
        "exit code": rc,
        "stdout": _clean_text(out, folder),
        "stderr": _clean_text(err, folder),
        "scores.jsonl": _scores(folder / "scores.jsonl", ordered),
        "summary.json": _summary(folder / "summary.json"),
        "report.html": _html(folder / "report.html"),
        "index.json": _index(folder / "index.json"),
        "scores.parquet": _parquet(folder / "scores.parquet", ordered),
    }


def cut_like_kill9(folder: Path, ordered: bool = True) -> None:
    """The state a kill -9 mid-run leaves: a third of the lines, a torn last line, no
    derived files (a run removes them before it changes the folder). Not ``ordered``
    (judge calls: tasks finish in an order of their own), the lines are sorted first, so
    that both trees resume the same tasks."""
    scores = folder / "scores.jsonl"
    lines = scores.read_bytes().splitlines(keepends=True)
    lines = lines if ordered else sorted(lines)
    keep = lines[: len(lines) // 3]
    scores.write_bytes(b"".join(keep) + lines[len(keep)][: len(lines[len(keep)]) // 2])
    for name in ("index.json", "scores.parquet", "summary.json", "report.html"):
        (folder / name).unlink(missing_ok=True)


def change_input(src: Path, dst: Path) -> None:
    """Rows edited (every 40th of the file) and the last 60th of them removed."""
    lines = src.read_text(encoding="utf-8").splitlines()
    lines = lines[: -max(1, len(lines) // 60)]
    for i in range(0, len(lines), max(1, len(lines) // 40)):
        try:
            row = json.loads(lines[i])
        except json.JSONDecodeError:
            continue
        row["retrieved_ids"] = list(reversed(row.get("retrieved_ids") or [])) + ["dX"]
        lines[i] = json.dumps(row)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tasks(data: bytes) -> dict[tuple, dict]:
    """scores.jsonl's lines by task (sample, metric, backend); unreadable lines by number."""
    out: dict[tuple, dict] = {}
    for i, line in enumerate(data.splitlines()):
        try:
            row = json.loads(line)
            out[(row.get("sample_id"), row.get("metric"), row.get("backend"))] = row
        except (json.JSONDecodeError, AttributeError):
            out[("line", i)] = {"raw": line[:80]}
    return out


def _brief(row: dict | None, other: dict | None) -> str:
    """A line's value and calls, and the fields (``details.*`` one level down) that
    differ from ``other``'s."""
    if row is None:
        return "absent"
    text = f"value {row.get('value')}, calls {(row.get('cost') or {}).get('calls', 0)}"
    if row.get("error"):
        text += f", error {row['error'][:60]!r}"
    if other is not None:
        paths = [k for k in {**other, **row} if k != "details" and row.get(k) != other.get(k)]
        mine, theirs = row.get("details") or {}, other.get("details") or {}
        paths += [f"details.{k}" for k in {**theirs, **mine} if mine.get(k) != theirs.get(k)]
        text += f" [{', '.join(paths)} differ]"
    return text


def show_difference(part: str, this: Any, other: Any, limit: int = 12) -> None:
    """What differs in ``part``: for scores.jsonl the tasks whose lines differ (each
    tree's value and calls), for text the first lines of a diff."""
    if part == "scores.jsonl" and isinstance(this, bytes) and isinstance(other, bytes):
        mine, theirs = _tasks(this), _tasks(other)
        keys = [k for k in {**theirs, **mine} if mine.get(k) != theirs.get(k)]
        print(f"    {len(keys)} of {len(mine)} tasks differ (other -> this):")
        for key in keys[:limit]:
            print(f"    {key}: {_brief(theirs.get(key), None)} -> {_brief(mine.get(key), theirs.get(key))}")
    elif isinstance(this, str) and isinstance(other, str):
        for line in list(difflib.unified_diff(other.splitlines(), this.splitlines(), lineterm="", n=0))[2:8]:
            print(f"    {line[:200]}")


@contextlib.contextmanager
def loopback_judge(on: bool) -> Iterator[list[str]]:
    """The CLI flags of a run on the loopback judge, with it started (no flags when off)."""
    if not on:
        yield []
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from judge_server import JudgeServer, framework_answers

    os.environ.setdefault("OPENAI_API_KEY", "loopback-no-key")  # the server ignores it; the client wants one
    with JudgeServer(answer_fn=framework_answers) as srv:
        url = srv.base_url
        # no judge cache: every request reaches the server, so what each tree asks decides what it writes
        yield [
            *("--base-url", url, "--model", "loopback", "--no-cache"),
            *("--embedding", url, "--embedding-model", "loopback-embed"),
        ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", type=Path, required=True, help="the other tree (e.g. /work/main)")
    ap.add_argument("--this", type=Path, default=ROOT, help="this tree (default: the one holding this script)")
    ap.add_argument("--n", type=int, default=1500, help="input rows")
    ap.add_argument("--input", type=Path, help="score this file instead of the hostile rows")
    ap.add_argument("--metrics", default=METRICS, help=f"the run's metrics (default {METRICS})")
    ap.add_argument("--judge", action="store_true", help="run on the loopback judge, without a judge cache")
    args = ap.parse_args()
    trees = {"this": args.this.resolve(), "other": args.against.resolve()}
    work = Path(tempfile.mkdtemp(prefix="same_output_"))
    data = work / "input.jsonl"
    if args.input is not None:
        shutil.copyfile(args.input, data)
    else:
        data.write_text("\n".join(hostile_rows(args.n)) + "\n", encoding="utf-8")
    changed = work / "changed.jsonl"
    change_input(data, changed)
    steps = [("first run", data, None), ("rerun", data, None), ("resume after kill -9", data, cut_like_kill9)]
    steps.append(("changed input", changed, None))
    differences = 0
    with loopback_judge(args.judge) as judge:
        flags = ["-m", args.metrics, *judge]
        for name, src, before in steps:
            got = {}
            for label, tree in trees.items():
                # each tree's folder is moved to the one path for its run: paths in the outputs agree
                folder, kept = work / "out", work / f"out_{label}"
                if kept.exists():
                    kept.rename(folder)
                if before is not None:
                    before(folder, ordered=not args.judge)
                rc, out, err = run_cli(tree, ["run", str(src), *flags, "--out", str(folder)], work)
                got[label] = snapshot(folder, rc, out, err, ordered=not args.judge)
                folder.rename(kept)
            for part in got["this"]:
                same = got["this"][part] == got["other"][part]
                differences += not same
                print(f"{name:22s} {part:15s} {'same' if same else 'DIFFERENT'}")
                if not same:
                    show_difference(part, got["this"][part], got["other"][part])
    print(f"{differences} difference(s); folders in {work}")
    if differences == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
