"""Human-labelled evaluation sets in the formats their authors publish, read from a local
copy (nothing is downloaded): ``unified-eval benchmark --set FORMAT:PATH``.

Each format is one module with one ``read(path, name)`` that yields a ``Sample`` (its
human verdict in ``metadata.labels``, the set it belongs to in ``metadata.benchmark_set``,
its id ``<set>/<the row's own id>``) or a ``RowError`` per row, never stopping at a bad
row. ``READERS`` names them by import path, so a format's module is imported only when a
set of that format is read.

===========  =====================================================================
FORMAT       what PATH is (the authors' published shape)
===========  =====================================================================
ragtruth     RAGTruth's ``response.jsonl`` + ``source_info.jsonl`` (the folder, or
             either file), or an eval file of one line per source with its responses
halueval     HaluEval's ``qa_data.json`` (also ``dialogue_data.json``,
             ``summarization_data.json``): each row a right and a hallucinated answer
aggrefact    LLM-AggreFact rows (``dataset``, ``doc``, ``claim``, ``label``) as CSV,
             JSONL or Parquet
faithbench   FaithBench's ``FaithBench.csv``, a ``batch_N.json`` or a folder of them
summac       SummaC benchmark rows (``document``, ``claim``, ``label``) as JSON
wice         WiCE's ``entailment_retrieval/claim/{dev,test}.jsonl``
begin        BEGIN's ``begin_{split}_{source}.tsv``
ares         ARES's TSV (``Question``/``Query``, ``Document``, ``Answer``, label columns)
jsonl        any file this project reads, with a ``labels`` object per row
===========  =====================================================================
"""

from __future__ import annotations

from unified.data.sets.common import READERS, SET_KEY, SetSpec, parse_set, read_set

__all__ = ["READERS", "SET_KEY", "SetSpec", "parse_set", "read_set"]
