"""The charts: one colour per error type everywhere, no chart that is one bar, a funnel that four
memory systems can share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("plotly", reason="the charts need plotly (the 'report' extra)")

from toolkits.report.charts import ERROR_TYPE_COLORS, SERIES_COLORS, build_charts  # noqa: E402
from toolkits.report.pipeline import analyse  # noqa: E402


@pytest.fixture(scope="module")
def four_systems(all_outputs):
    analysis = analyse(all_outputs)
    charts, notice = build_charts(analysis.statistics, analysis.facts)
    assert notice is None
    return analysis, {c.slug: c for c in charts}


def _bar_colours(chart) -> list[tuple[str, str]]:
    """(label, colour) of every bar of the chart: per trace for a one-colour trace, per bar otherwise."""
    out = []
    for trace in chart.figure.data:
        if trace.type != "bar":
            continue
        colour = trace.marker.color
        if isinstance(colour, str):
            out.append((trace.name, colour))
        else:
            out += list(zip(trace.x, colour, strict=True))
    return out


def test_every_error_type_has_one_colour_in_every_chart_and_no_other_series_takes_it(four_systems):
    _, charts = four_systems
    error_colours = set(ERROR_TYPE_COLORS.values())
    seen_types = set()
    for slug, chart in charts.items():
        for label, colour in _bar_colours(chart):
            if label in ERROR_TYPE_COLORS:
                assert colour == ERROR_TYPE_COLORS[label], (slug, label)
                seen_types.add(label)
            elif slug != "decision_events":  # decisions are drawn in the colour of the type they read as
                assert colour not in error_colours, (slug, label, colour)
    assert len(seen_types) == 5
    assert set(SERIES_COLORS).isdisjoint(error_colours)


def test_the_funnel_shows_four_systems_as_groups_of_shares(four_systems):
    analysis, charts = four_systems
    funnel = charts["loss_funnel"].figure
    systems = analysis.statistics["loss_funnel"]["by_memory_system"]
    assert len(funnel.data) == 4 == len(systems)
    assert funnel.layout.barmode == "group"
    for trace, (name, block) in zip(funnel.data, systems.items(), strict=True):
        assert trace.name == f"{name} ({block['cases']})"
        assert trace.y[0] == 1.0 and list(trace.y) == sorted(trace.y, reverse=True)
        shown = [s for s in block["stages"][:-1] if any(b["lost_at"][s] for b in systems.values())]
        assert [int(t) for t in trace.text] == [block["cases"], *(block["carried_after"][s] for s in shown)]
    assert len({t.marker.color for t in funnel.data}) == 4


def _single_system_output(outputs_dir: Path, tmp_path: Path, op_names_from: str) -> Path:
    data = json.loads((outputs_dir / op_names_from).read_text(encoding="utf-8"))
    path = tmp_path / op_names_from
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_funnel_stages_where_nothing_was_lost_are_left_out(four_systems):
    analysis, charts = four_systems
    lost = analysis.statistics["loss_funnel"]["overall"]["lost_at"]
    assert lost["store"] == 0  # the committed benchmark loses nothing between the updates and the store
    ticks = list(charts["loss_funnel"].figure.data[0].x)
    assert len(ticks) == 1 + sum(1 for s in ("extraction", "update/deletion", "retrieval") if lost[s])
    assert not any("store" in t for t in ticks)
    overall = analysis.statistics["loss_funnel"]["overall"]
    shown = [s for s in ("extraction", "update/deletion", "store", "retrieval") if lost[s]]
    totals = [overall["cases"], *(overall["carried_after"][s] for s in shown)]
    assert totals == sorted(set(totals), reverse=True)  # over all systems, no bar repeats the one before


def test_no_chart_is_a_single_bar(outputs_dir, tmp_path: Path):
    analysis = analyse([_single_system_output(outputs_dir, tmp_path, "rag.json")])
    assert len(analysis.statistics["memory_systems"]) == 1 and len(analysis.statistics["dataset_sources"]) == 1
    charts = {c.slug: c for c in build_charts(analysis.statistics, analysis.facts)[0]}
    assert "error_types_by_dataset_source" not in charts  # one source: the same bar again
    by_type = charts["error_types_by_memory_system"].figure
    assert len(by_type.data) == 1 and list(by_type.data[0].x) == list(analysis.statistics["error_types"]["overall"]["counts"])
    for slug, chart in charts.items():
        bars = [b for t in chart.figure.data if t.type == "bar" for b in (t.y if t.orientation != "h" else t.x)]
        if bars:
            assert len(bars) > 1, slug


def test_a_single_blamed_op_gets_no_ranking_chart(outputs_dir, tmp_path: Path):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    for record in data["results"]:
        record["graph_path"] = str(tmp_path / "gone.json")
        record["attributed_operation"] = {"op_name": "memory_system.retrieve", "category": "retrieval"}
    path = tmp_path / "rag.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    analysis = analyse([path])
    slugs = {c.slug for c in build_charts(analysis.statistics, analysis.facts)[0]}
    assert "blamed_operations" not in slugs and "blamed_categories" not in slugs
