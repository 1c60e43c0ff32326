"""The report's hand-drawn SVG plots: what each one shows, read back from the SVG
(well-formed XML, so hostile names are escaped), and the one binning rule."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from unified.report import drawing, plots

HOSTILE = "<script>alert('x')</script>\"&"


def _tree(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # raises on any unescaped user text
    assert root.tag == "svg" and root.get("role") == "img" and root.get("aria-label")
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    return root


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter("text")]


def _tips(root: ET.Element, tag: str) -> list[str]:
    return [t.findtext("title") or "" for t in root.iter(tag) if t.find("title") is not None]


def test_histogram_bins_are_half_open_and_the_last_is_closed():
    counts = drawing.histogram([0, 0.49, 0.5, 10, 9.99, 9.5], 2, 20)
    assert len(counts) == 20 and counts[0] == 2 and counts[1] == 1 and counts[19] == 3 and sum(counts) == 6
    # out of 0–10 (none should be): counted at the nearest end, never lost or wrapped
    assert drawing.histogram([-0.2, 10.7], 2, 20) == [1] + [0] * 18 + [1]
    assert drawing.histogram([-1.7e308, 1.7e308], 5, 50) == [1] + [0] * 48 + [1]  # clamped before scaling


def test_histogram_matches_numpys_on_values_at_and_between_edges():
    np = pytest.importorskip("numpy")
    values = [i / 100 for i in range(1001)] + [i / 7 for i in range(71)]  # every edge, and values off the grid
    assert drawing.histogram(values, 2, 20) == np.histogram(values, bins=[i * 0.5 for i in range(21)])[0].tolist()


def test_distribution_bars_mean_line_and_label():
    root = _tree(plots.distribution("faith", {"native": [0, 0.49, 0.5, 10], "ragas": []}))
    tips = _tips(root, "rect")
    assert tips == ["native: 0.0–0.5: 2 sample(s)", "native: 0.5–1.0: 1 sample(s)", "native: 9.5–10.0: 1 sample(s)"]
    bars = [r for r in root.iter("rect") if r.find("title") is not None]
    heights = [float(r.get("height")) for r in bars]
    assert heights[0] == pytest.approx(2 * heights[1]) and heights[1] == heights[2]  # each to its count
    mean = 10.99 / 4
    (dash,) = [ln for ln in root.iter("line") if ln.get("stroke-dasharray")]
    # the x axis runs from 10 to 370 user units for 0–10
    assert float(dash.get("x1")) == pytest.approx(10 + 360 * mean / 10, abs=0.05) == float(dash.get("x2"))
    texts = _texts(root)
    assert f"native  n=4  mean {mean:.2f}" in texts and "ragas  no successful score" in texts
    ticks = ["0", "2", "4", "6", "8", "10"]
    assert "faith" in texts and "score (0–10)" in texts and [t for t in texts if t in ticks] == ticks


def test_scatter_of_28_samples_on_3_points_shows_3_labelled_markers():
    xs = [0.0] * 10 + [5.0] * 9 + [10.0] * 9
    pair = {"a": "native", "b": "ragas", "xs": xs, "ys": list(xs), "n": 28, "spearman": 1.0, "pearson": 1.0}
    root = _tree(plots.scatter("recall", pair))
    circles = list(root.iter("circle"))
    assert len(circles) == 3
    assert sorted(_tips(root, "circle")) == sorted(
        ["native 0, ragas 0: 10 sample(s)", "native 5, ragas 5: 9 sample(s)", "native 10, ragas 10: 9 sample(s)"]
    )
    texts = _texts(root)
    # the counts 10, 9, 9 beside the markers; "10" twice more: the end tick of each axis
    assert sorted(t for t in texts if t in ("9", "10")) == ["10", "10", "10", "9", "9"]
    radius = {c.findtext("title").split(": ")[1]: float(c.get("r")) for c in circles}
    assert radius["10 sample(s)"] ** 2 / radius["9 sample(s)"] ** 2 == pytest.approx(10 / 9, rel=0.03)  # area ∝ count
    assert "n=28 ρ=1.00 r=1.00 |Δ|=—" in texts and "native" in texts and "ragas" in texts


def test_scatter_past_density_at_is_a_log_shaded_2d_histogram():
    grid = [(i % 21 * 0.5, i // 21 * 0.5) for i in range(21 * 21)]  # 441 distinct points, one per cell
    assert len(grid) > plots.DENSITY_AT
    points = grid + [(3.05, 3.1)] * 99  # with the point (3, 3): 100 samples in the cell 3.0–3.2 × 3.0–3.2
    xs, ys = [x for x, _ in points], [y for _, y in points]
    root = _tree(plots.scatter("faith", {"a": "a", "b": "b", "xs": xs, "ys": ys, "n": len(xs)}))
    assert not list(root.iter("circle"))
    fill = {r.findtext("title"): r.get("fill") for r in root.iter("rect") if r.find("title") is not None}
    counts = [int(re.search(r": (\d+) sample", t).group(1)) for t in fill]
    assert len(fill) == 441 and sum(counts) == len(xs)
    # the fullest cell is darkest, a one-sample cell lightest (log scale from 1 to the top)
    assert fill["a 3.0–3.2, b 3.0–3.2: 100 sample(s)"] == drawing.BLUES[-1]
    assert fill["a 0.4–0.6, b 9.8–10.0: 1 sample(s)"] == drawing.BLUES[0]  # 10 is in the last cell
    texts = _texts(root)
    assert {"1", "100", "samples"} <= set(texts)  # the legend's ends and caption


def test_heatmap_writes_values_na_and_leaves_blanks():
    root = _tree(plots.heatmap(["faith", "recall"], ["a vs b", "a vs c"], [[0.5, "n/a"], [None, -1.0]]))
    texts = _texts(root)
    assert "0.50" in texts and "n/a" in texts and "-1.00" in texts and "Spearman ρ between backends" in texts
    tips = _tips(root, "rect")
    assert tips == [
        "faith, a vs b: ρ = 0.50",
        "faith, a vs c: ρ undefined",
        "recall, a vs b: not scored by this pair",
        "recall, a vs c: ρ = -1.00",
    ]
    fills = {r.findtext("title"): r.get("fill") for r in root.iter("rect") if r.find("title") is not None}
    assert fills["recall, a vs c: ρ = -1.00"] == drawing.RDYLGN[0] and fills["faith, a vs b: ρ = 0.50"] != "#fff"
    assert fills["recall, a vs b: not scored by this pair"] == "#fff"
    assert {"faith", "recall", "a vs b", "a vs c"} <= set(texts)


def test_hostile_names_are_escaped_and_plots_are_deterministic():
    pair = {"a": HOSTILE, "b": "b", "xs": [1.0, 2.0], "ys": [1.0, 2.0], "n": 2}
    svgs = [
        plots.distribution(HOSTILE, {HOSTILE: [1.0, 2.0]}),
        plots.scatter(HOSTILE, pair),
        plots.scatter(HOSTILE, {**pair, "xs": [i / 50 for i in range(500)], "ys": [i / 50 for i in range(500)]}),
        plots.heatmap([HOSTILE], [HOSTILE], [[0.1]]),
    ]
    assert all(HOSTILE in ET.fromstring(svg).get("aria-label") for svg in svgs[:3])
    for svg in svgs:
        assert "<script>" not in svg and "&lt;script&gt;" in svg
        root = _tree(svg)
        assert any(HOSTILE in t for t in _texts(root))
        assert " id=" not in svg  # nothing that could collide between the plots of one page
    again = [plots.distribution(HOSTILE, {HOSTILE: [1.0, 2.0]}), plots.scatter(HOSTILE, pair)]
    assert again == svgs[:2]
