"""Cut one encode's texts into forward passes: padding against the fixed cost of a pass.

A pass of the local model pads every text to the longest of its batch, and its cost on
one core is close to a fixed part plus a part per padded word piece (measured on MiniLM,
one torch thread, issue 27: a pass of 1 × 4 word pieces costs ~17 ms of CPU, each padded
word piece ~0.25 ms more; the fixed part is the Python around the forward and the ~43 MB
of dense weights streamed through the cache once per pass):

    cost(pass) = F + c · n · L        n texts, L = the longest one's word pieces

With the texts sorted by length, the passes are runs of neighbours, and the cheapest cut
is a shortest path over the sorted lengths l_1 ≤ … ≤ l_m (in units of c, F = ``overhead``):

    best[0] = 0
    best[j] = min over i ≤ j, j − i < max_texts of  best[i − 1] + overhead + (j − i + 1) · l_j

One pass over every text of a merged micro-batch (what sentence-transformers does with
its batch size of 64) padded the bundled file's texts to twice their word pieces.

Idle cores: a cut with fewer passes than idle workers leaves cores unused, so while
there are idle workers the costliest pass worth splitting (its padded word pieces at
least ``2 · overhead``: each half still outweighs the fixed cost it adds) is cut in two
at its middle. That spends one more fixed cost of CPU to finish sooner on a free core.

The cut never changes a vector beyond float noise: the model masks padding out, so a
text's vectors do not depend on its batch (|Δ| < 1e-6 per component,
``tests/test_microbatch.py``).
"""

from __future__ import annotations

from typing import Sequence

#: F / c of the module docstring: a pass's fixed cost in padded word pieces (17 ms / 0.25 ms
#: ≈ 68 measured under load on the shared 2-core machine; 60 is kept because the cut
#: barely moves anywhere between 40 and 100)
PASS_OVERHEAD = 60


def plan_passes(
    lengths: Sequence[int], overhead: int = PASS_OVERHEAD, max_texts: int = 64, idle: int = 1
) -> list[list[int]]:
    """Indices into ``lengths`` (word pieces per text), one list per forward pass, each
    pass's texts in ascending length; every index exactly once. ``idle``: workers free
    to run a pass now (the split rule of the module docstring)."""
    if not lengths:
        return []
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    sizes = [max(1, lengths[i]) for i in order]
    runs = _cheapest_runs(sizes, overhead, max(1, max_texts))
    while len(runs) < idle:
        # the costliest run that is worth splitting (one long text cannot be)
        worth = [r for r in runs if r[1] - r[0] >= 2 and (r[1] - r[0]) * sizes[r[1] - 1] >= 2 * overhead]
        if not worth:
            break
        lo, hi = max(worth, key=lambda r: (r[1] - r[0]) * sizes[r[1] - 1])
        runs.remove((lo, hi))
        mid = (lo + hi) // 2
        runs += [(lo, mid), (mid, hi)]
    return [order[lo:hi] for lo, hi in sorted(runs)]


def _cheapest_runs(sizes: list[int], overhead: int, max_texts: int) -> list[tuple[int, int]]:
    """The half-open runs [lo, hi) of the ascending ``sizes`` that minimise
    Σ (overhead + (hi − lo) · sizes[hi − 1]) (the shortest path of the module docstring)."""
    m = len(sizes)
    best = [0] + [0] * m
    start = [0] * (m + 1)
    for j in range(1, m + 1):
        width = sizes[j - 1]
        best[j], start[j] = min((best[i] + overhead + (j - i) * width, i) for i in range(max(0, j - max_texts), j))
    runs = []
    j = m
    while j > 0:
        runs.append((start[j], j))
        j = start[j]
    return runs[::-1]
