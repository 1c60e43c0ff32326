"""CSV exports of the frameworks' own results (issue 45): pandas' ``DataFrame.to_csv`` — and
RAGAS's ``EvaluationDataset.to_pandas().to_csv`` — write a list cell as its Python repr,
which quotes an element holding an apostrophe with double quotes
(``["It's here.", 'plain']``). Such a row was lost ("invalid JSON array"); it is read,
by literal parsing only, and anything that is not a list of strings is still a row error."""

from __future__ import annotations

import pandas as pd
import pytest

from unified.data.io import load_samples

CONTEXTS = [
    ["It's here.", "plain"],
    ['He said "hi"', "x, y"],
    ["both ' and \"", "back\\slash", "tab\tin", "new\nline", "uni é"],
]


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_input": [f"q{i}?" for i in range(len(CONTEXTS))],
            "response": ["a"] * len(CONTEXTS),
            "retrieved_contexts": CONTEXTS,
            "reference": ["r"] * len(CONTEXTS),
        }
    )


def test_a_pandas_csv_of_list_cells_reads_back_every_row(tmp_path):
    path = tmp_path / "export.csv"
    _rows().to_csv(path, index=False)
    samples, errors = load_samples(path)
    assert errors == []
    assert [s.retrieved_contexts for s in samples] == CONTEXTS


def test_a_ragas_dataset_exported_to_csv_reads_back(tmp_path):
    ragas = pytest.importorskip("ragas")
    from unified.adapters.ragas.quiet import quiet_ragas

    quiet_ragas()
    dataset = ragas.EvaluationDataset.from_list(_rows().to_dict(orient="records"))
    path = tmp_path / "ragas.csv"
    dataset.to_pandas().to_csv(path, index=False)
    samples, errors = load_samples(path)
    assert errors == [] and [s.retrieved_contexts for s in samples] == CONTEXTS


@pytest.mark.parametrize(
    "cell",
    [
        '["unterminated',  # meant as JSON, broken
        "[\"__import__('os').system('true')\"]",  # a string, never evaluated
        "['a', 1]",  # not a list of strings
        '["a", None]',
    ],
)
def test_what_is_not_a_list_of_strings_is_still_a_row_error_or_a_plain_string(tmp_path, cell):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"user_input": ["q?"], "response": ["a"], "retrieved_contexts": [cell]}).to_csv(path, index=False)
    samples, errors = load_samples(path)
    if samples:  # the one string that is a valid list: read, never run
        assert samples[0].retrieved_contexts == ["__import__('os').system('true')"]
    else:
        assert len(errors) == 1 and "retrieved_contexts" in str(errors[0])
