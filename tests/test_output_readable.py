"""Issue 24 item 5: output a person reads. `compare` shows the summary, the agreement and
the real disagreements (no |diff| 0.00 rows, reasons cut at word boundaries) unless
--verbose; `-q` prints nothing but errors and gate results; --help shows no `<bool>`
after switches and states the judge defaults."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from unified.analysis.crosscheck import crosscheck, render_crosscheck
from unified.cli.app import app
from unified.scores import Score
from unified.text import cut_at_word

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
REASON = "the response claims the tower was built in eighteen eighty nine which the retrieved passage supports fully"


def _score(backend: str, sid: str, value: float) -> Score:
    return Score(metric="faithfulness", backend=backend, sample_id=sid, value=value, reason=REASON)


def test_compare_shows_only_real_disagreements_with_whole_words():
    scores = [_score(b, f"s{i}", v) for i in range(6) for b, v in (("native", 5.0), ("ragas", 5.0 if i < 4 else 9.0))]
    res = crosscheck(scores)
    short = render_crosscheck(res, width=200, verbose=False)
    assert "largest disagreements" in short and "s4" in short and "s5" in short
    assert not any(f"s{i} " in short or f"s{i}\n" in short for i in range(4))  # equal values: no row
    assert "thresholds translated" not in short and "--verbose" in short
    assert "thresholds translated" in render_crosscheck(res, width=200, verbose=True)
    cut = cut_at_word(REASON, 60)
    assert cut.endswith("…") and REASON.startswith(cut[:-1]) and REASON[len(cut) - 1] == " "
    assert cut in short


def test_cut_at_word_keeps_short_text_and_never_splits_a_word():
    assert cut_at_word("short reason", 60) == "short reason"
    for width in range(10, len(REASON)):
        cut = cut_at_word(REASON, width)
        assert len(cut) <= width and REASON.startswith(cut[:-1]) and REASON[len(cut) - 1] == " "


def test_quiet_prints_only_gate_results(tmp_path):
    args = [
        "run",
        str(DATA),
        "--metrics",
        "mrr,precision@3",
        "--out",
        str(tmp_path / "r"),
        "-q",
        "--fail-under",
        "mrr=5",
    ]
    for _ in range(2):  # the second run resumes: still silent
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        assert r.output.strip().splitlines() == ["PASS mrr (native): mean 8.69 >= 5.00"]


def test_help_shows_no_bool_and_states_the_judge_defaults():
    for command in ("run", "compare", "migrate", "validate", "convert", "diff", "cache", "--help"):
        text = (
            CliRunner()
            .invoke(app, [command, "--help"][: 1 if command == "--help" else 2], env={"COLUMNS": "200"})
            .output
        )
        assert "<bool>" not in text, command
    text = " ".join(CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "(default 60)" in text and "(default 4)" in text and "[prices] in --config" in text
