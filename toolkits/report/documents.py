"""The report files: JSON (``{"report": …}`` plus the statistics), Markdown and a self-contained HTML page.

Both human-readable documents are rendered from one list of :class:`Section` objects (prose,
tables and chart references), so the Markdown and the HTML page always say the same thing. The
Markdown shows each chart's PNG when one was written and links to the chart's place in the HTML
page; the HTML page inlines plotly.js once and works offline.
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json, atomic_write_text

from .charts import Chart, plotly_js
from .funnel import FUNNEL_STAGES

__all__ = [
    "HTML_NAME",
    "JSON_NAME",
    "MARKDOWN_NAME",
    "ReportContent",
    "Section",
    "Table",
    "build_sections",
    "render_html",
    "render_markdown",
    "write_documents",
]

JSON_NAME = "error_analysis_report.json"
MARKDOWN_NAME = "error_analysis_report.md"
HTML_NAME = "error_analysis_report.html"


@dataclass(frozen=True, kw_only=True)
class Table:
    """A plain table (cells are already formatted strings)."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass(kw_only=True)
class Section:
    """One section of the human-readable report."""

    title: str
    slug: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    """Slugs of the charts shown in this section."""
    report_text: str | None = None
    """The LLM report (rendered as prose paragraphs)."""


@dataclass(kw_only=True)
class ReportContent:
    """Everything the documents show."""

    title: str
    statistics: dict[str, Any]
    inputs: dict[str, Any]
    llm: dict[str, Any] | None
    """None with ``--no-llm``; else model, overview source, batches, costs, failure, versions."""
    report: str | None
    unrenderable: list[dict[str, Any]]
    notices: list[str]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _num(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def _error_type_table(groups: dict[str, Any], label: str) -> Table:
    types: list[str] = []
    for g in groups.values():
        types += [t for t in g["counts"] if t not in types]
    rows = []
    for name, g in groups.items():
        rows.append(
            [name, str(g["records"]), str(g["failed"])]
            + [f"{g['counts'].get(t, 0)} ({_pct(g['shares'].get(t, 0.0))})" if g["attributed"] else "0" for t in types]
        )
    return Table(header=[label, "records", "failed attributions", *types], rows=rows)


def _blamed_table(rows: list[dict[str, Any]], key: str, label: str) -> Table:
    by_name = key == "op_name"
    header = [label, "cases", "share", "error types", "memory systems"]
    if by_name:
        header += ["prompt target", "decisions"]
    table_rows = []
    for r in rows:
        row = [
            f"`{r[key]}`" if by_name else r[key],
            str(r["count"]),
            _pct(r["share"]),
            ", ".join(f"{t} {n}" for t, n in r["error_types"].items()),
            ", ".join(f"{s} {n}" for s, n in r["memory_systems"].items()),
        ]
        if by_name:
            row.append(", ".join(f"`{t}` {n}" if not t.startswith("(") else f"{t} {n}"
                                 for t, n in r.get("prompt_targets", {}).items()))
            row.append(", ".join(f"{e} {n}" for e, n in (r.get("decision_events") or {}).items()) or "–")
        table_rows.append(row)
    return Table(header=header, rows=table_rows)


def _shown(text: Any, limit: int = 240) -> str:
    """A stored text for a table cell: repr quotes removed, one line, at most ``limit`` characters."""
    value = str(text or "")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        try:
            literal = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            literal = None
        if isinstance(literal, str):
            value = literal
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _link(url: str | None, text: str = "open") -> str:
    return f"[{text}]({url})" if url else "–"


def _examples_table(row: dict[str, Any]) -> Table:
    return Table(
        header=["case", "question", "gold", "prediction", "reason", "trail", "viewer"],
        rows=[
            [
                f"{e['query_id']} ({e['error_type']}" + (f", {e['decision_event']}" if e.get("decision_event") else "")
                + (", rescued by replay" if e.get("rescued") else "") + ")",
                _shown(e["question"], 160), _shown(e["golden_answer"], 120), _shown(e["prediction"], 160),
                _shown(e["reason"], 300), _shown(e["trail"], 300) or "–", _link(e["viewer_link"]),
            ]
            for e in row.get("examples", [])
        ],
        caption=f"Examples blamed on `{row['op_name']}` ({len(row.get('examples', []))} of {row['count']})",
    )


def _examples_section(rows: list[dict[str, Any]]) -> Section:
    return Section(
        title="Example cases per blamed operation",
        slug="examples",
        paragraphs=["Each case links to the annotation viewer (`python -m annotation_interface --data <folder>`; "
                    "the link names the folder, the graph and the case)."],
        tables=[_examples_table(row) for row in rows if row.get("examples")],
    )


def _prompt_target_table(targets: list[dict[str, Any]]) -> Table:
    return Table(
        header=["prompt target", "blamed cases", "operations", "error types", "rescued by replay"],
        rows=[
            [
                t["target"] if t["target"].startswith("(") else f"`{t['target']}`",
                str(t["count"]),
                ", ".join(f"`{o}` {n}" for o, n in t["operations"].items()),
                ", ".join(f"{e} {n}" for e, n in t["error_types"].items()),
                f"{t['replay']['rescued']} of {t['replay']['replayed']}" if t["replay"]["replayed"] else "–",
            ]
            for t in targets
        ],
    )


def _recovery_sentences(replay: dict[str, Any]) -> list[str]:
    lines = [
        f"{replay['replayed']} failure(s) were replayed with their blamed operation repaired; "
        f"{replay['rescued']} were rescued (recovery gain {_pct(replay['recovery_gain'])})."
    ]
    lines += [f"Repairing `{r['target']}` rescues {r['rescued']} of {r['replayed']} failure(s)."
              for r in replay["by_prompt_target"] if not r["target"].startswith("(")]
    lines += [f"Repairing `{r['op_name']}` rescues {r['rescued']} of {r['replayed']} failure(s)."
              for r in replay["by_op"]]
    return lines


def _recovery_table(rows: list[dict[str, Any]], key: str, label: str) -> Table:
    return Table(
        header=[label, "replayed", "rescued", "recovery gain"],
        rows=[[f"`{r[key]}`" if not r[key].startswith("(") else r[key], str(r["replayed"]), str(r["rescued"]),
               _pct(r["recovery_gain"])] for r in rows],
    )


def _funnel_table(funnel: dict[str, Any]) -> Table:
    systems = funnel["by_memory_system"]
    header = ["stage", "lost here", "still carried after"]
    if len(systems) > 1:
        header += [f"{s}: lost / carried" for s in systems]
    rows = []
    overall = funnel["overall"]
    for stage in FUNNEL_STAGES:
        row = [stage, str(overall["lost_at"][stage]), str(overall["carried_after"][stage])]
        if len(systems) > 1:
            row += [f"{f['lost_at'][stage]} / {f['carried_after'][stage]}" for f in systems.values()]
        rows.append(row)
    return Table(header=header, rows=rows)


def _gold_tables(gold: dict[str, Any]) -> list[Table]:
    per_type = Table(
        header=["gold error type", "cases", "failed", "error-type accuracy", "operation accuracy", "both"],
        rows=[
            [t, str(m["cases"]), str(m["failed"]), _pct(m["error_type_accuracy"]), _pct(m["op_accuracy"]),
             _pct(m["joint_accuracy"])]
            for t, m in gold["by_gold_error_type"].items()
        ],
        caption="Accuracy per gold error type",
    )
    matrix = gold["confusion_matrix"]
    rows_used = [g for g in matrix if sum(matrix[g].values())]
    columns = list(next(iter(matrix.values()))) if matrix else []
    columns = [c for c in columns if any(matrix[g][c] for g in rows_used)]
    confusion = Table(
        header=["gold \\ predicted", *columns],
        rows=[[g, *(str(matrix[g][c]) for c in columns)] for g in rows_used],
        caption="Confusion matrix (rows: gold, columns: predicted; FAILED = no attribution)",
    )
    return [per_type, confusion]


def _cost_table(costs: dict[str, Any]) -> Table:
    def cells(name: str, block: dict[str, Any], cases: int) -> list[str]:
        out = [name, str(cases)]
        for key, digits in (("input_tokens", 0), ("output_tokens", 0), ("seconds", 1)):
            spread = block.get(key)
            out.append("–" if not spread else " / ".join(_num(spread[k], digits) for k in ("mean", "median", "max")))
        return out

    rows = [cells("all", costs, costs["executed_cases"])]
    rows += [cells(s, b, b["cases"]) for s, b in costs["by_memory_system"].items()]
    return Table(
        header=["memory system", "executed cases", "input tokens (mean / median / max)",
                "output tokens (mean / median / max)", "seconds (mean / median / max)"],
        rows=rows,
        caption=f"{costs['cached_cases']} cached case(s) excluded",
    )


def _funnel_section(loss_funnel: dict[str, Any]) -> Section:
    funnel = loss_funnel["overall"]
    trail = funnel["trail"]
    text = (
        f"{funnel['cases']} attributed case(s), each placed at the stage its verdict's error type implies, so this "
        "funnel and the error-type table count the same cases"
        + (f" ({funnel['unknown']} of an unknown error type are left out)" if funnel["unknown"] else "")
        + (f"; {funnel['non_memory']} non-memory verdict(s) lose nothing along the pipeline and are left out"
           if funnel["non_memory"] else "")
        + f". {trail['checked']} case(s) carry an evidence_flow trail: {trail['agrees']} agree with their verdict, "
        f"{trail['contradicts']} contradict it."
    )
    tables = [_funnel_table(loss_funnel)]
    contradictions = loss_funnel.get("contradictions") or []
    if contradictions:
        text += " The contradicting cases stay at their verdict's stage and are listed below; open them to decide."
        tables.append(Table(
            header=["case", "memory system", "verdict", "verdict stage", "trail stage", "trail", "viewer"],
            rows=[[c["query_id"], c["memory_system"], f"{c['error_type']} at `{c['op_name'] or '?'}`",
                   str(c["verdict_stage"]), str(c["trail_stage"]), _shown(c["trail"], 300), _link(c["viewer_link"])]
                  for c in contradictions],
            caption="Cases whose trail contradicts their verdict",
        ))
    return Section(title="Where the information was lost", slug="loss-funnel", paragraphs=[text], tables=tables,
                   charts=["loss_funnel"])


def build_sections(content: ReportContent) -> list[Section]:
    """The sections of the Markdown and HTML report."""
    stats = content.statistics
    sections: list[Section] = []

    analysis = Section(title="Analysis", slug="analysis")
    llm = content.llm
    if llm is None:
        analysis.paragraphs.append(
            "Statistics only (run without --no-llm for the written analysis of the failure patterns)."
        )
    else:
        if llm.get("failure"):
            done = llm["batches_done"]
            analysis.paragraphs.append(
                f"The written analysis stopped: {llm['failure']}. "
                + (f"Shown is the version after batch {done} of {llm['batches_total']}; rerun the same command to resume."
                   if done else "No batch finished; rerun the same command to retry.")
            )
        costs = llm.get("costs") or {}
        analysis.paragraphs.append(
            f"Written by `{llm['model']}` from {llm['cases_sent']} case(s) in {llm['batches_total']} batch(es) "
            f"(overview: {llm['overview']}; {costs.get('input_tokens', 0):,} input and "
            f"{costs.get('output_tokens', 0):,} output tokens, {costs.get('minutes', 0.0):.1f} min)."
        )
        analysis.report_text = content.report
    sections.append(analysis)

    error_types = stats["error_types"]
    overall = error_types["overall"]
    sections.append(
        Section(
            title="Error types",
            slug="error-types",
            paragraphs=[
                f"{stats['records']} failed question(s): {stats['attributed']} attributed, "
                f"{stats['failed']} whose attribution failed. "
                + ", ".join(f"{t} {n} ({_pct(overall['shares'][t])})" for t, n in overall["counts"].items())
                + "."
            ],
            tables=[
                _error_type_table(error_types["by_memory_system"], "memory system"),
                _error_type_table(error_types["by_dataset_source"], "dataset source"),
            ],
            charts=["error_types_by_memory_system", "error_types_by_dataset_source"],
        )
    )

    sections.append(_funnel_section(stats["loss_funnel"]))

    blamed = stats["blamed_operations"]
    blamed_text = f"{blamed['distinct_op_names']} distinct operation name(s) are blamed."
    if blamed["unresolved"]:
        blamed_text += (
            f" {blamed['unresolved']} attribution(s) name an operation that cannot be resolved in its graph "
            "(listed as `(unresolved)`)."
        )
    sections.append(
        Section(
            title="Most-blamed operations",
            slug="blamed-operations",
            paragraphs=[blamed_text],
            tables=[_blamed_table(blamed["by_name"], "op_name", "operation"),
                    _blamed_table(blamed["by_category"], "category", "operation category")],
            charts=["blamed_operations", "blamed_categories", "decision_events"],
        )
    )
    if any(row.get("examples") for row in blamed["by_name"]):
        sections.append(_examples_section(blamed["by_name"]))
    if stats.get("prompt_targets"):
        sections.append(
            Section(
                title="Prompt targets",
                slug="prompt-targets",
                paragraphs=["The optimization target each blamed operation consumes (the registry "
                            "`run_optimization.py` uses): the prompt to change for these failures."],
                tables=[_prompt_target_table(stats["prompt_targets"])],
            )
        )
    replay = stats.get("replay")
    if replay:
        sections.append(
            Section(
                title="Recovery gain (counterfactual replay)",
                slug="recovery-gain",
                paragraphs=_recovery_sentences(replay),
                tables=[_recovery_table(replay["by_prompt_target"], "target", "prompt target"),
                        _recovery_table(replay["by_op"], "op_name", "operation")],
                charts=["recovery_gain"],
            )
        )
    non_memory = stats.get("non_memory") or {}
    if non_memory.get("cases"):
        sections.append(
            Section(
                title="Non-memory errors",
                slug="non-memory",
                paragraphs=["Failures that no memory operation caused (a judge that called a right answer wrong, "
                            "a gold answer no message supports); counted as their own error types, never blamed on "
                            "an operation: " + ", ".join(f"{t} {n}" for t, n in non_memory["counts"].items()) + "."],
                tables=[Table(header=["case", "verdict", "question", "gold", "prediction", "reason", "viewer"],
                              rows=[[c["query_id"], str(c["label"]), _shown(c["question"], 160),
                                     _shown(c["golden_answer"], 120), _shown(c["prediction"], 160),
                                     _shown(c["reason"], 300), _link(c["viewer_link"])]
                                    for c in non_memory["cases"]])],
            )
        )

    gold = stats.get("gold")
    if gold:
        sections.append(
            Section(
                title="Attribution accuracy (gold labels)",
                slug="accuracy",
                paragraphs=[
                    f"{gold['cases']} labelled case(s): error type {_pct(gold['error_type_accuracy'])}, "
                    f"operation {_pct(gold['op_accuracy'])}, both {_pct(gold['joint_accuracy'])}; failed attributions "
                    "count as wrong."
                    + (f" {gold['unlabelled_records']} record(s) carry no gold label." if gold["unlabelled_records"] else "")
                ],
                tables=_gold_tables(gold),
                charts=["accuracy_by_error_type", "confusion_matrix"],
            )
        )

    sections.append(
        Section(title="Cost per case", slug="cost", tables=[_cost_table(stats["costs"])], charts=["cost_per_case"])
    )

    failed = stats["failed_attributions"]
    if failed:
        sections.append(
            Section(
                title="Failed attributions (not sent to the model)",
                slug="failed-attributions",
                tables=[Table(header=["record", "query", "memory system", "why"],
                              rows=[[str(f["index"]), f["query_id"], f["memory_system"], str(f["failure"])]
                                    for f in failed])],
            )
        )
    if content.unrenderable:
        sections.append(
            Section(
                title="Unrenderable cases (graph missing or unreadable)",
                slug="unrenderable",
                tables=[Table(header=["record", "query", "why"],
                              rows=[[str(u["index"]), u["query_id"], u["reason"]] for u in content.unrenderable])],
            )
        )
    if content.notices:
        sections.append(Section(title="Notices", slug="notices", paragraphs=list(content.notices)))
    return sections


# ------------------------------------------------------------------------------------ Markdown


def _md_cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _md_table(table: Table) -> str:
    lines = []
    if table.caption:
        lines += [f"*{table.caption}*", ""]
    lines.append("| " + " | ".join(_md_cell(h) for h in table.header) + " |")
    lines.append("|" + "---|" * len(table.header))
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def render_markdown(content: ReportContent, sections: Sequence[Section], charts: Sequence[Chart],
                    pngs: dict[str, str], *, html_name: str = HTML_NAME) -> str:
    """The Markdown report; chart PNGs are linked by paths relative to the save folder."""
    by_slug = {c.slug: c for c in charts}
    inputs = content.inputs
    out = [f"# {content.title}", ""]
    out.append(
        f"Input: {', '.join(f'`{f}`' for f in inputs['files'])} — {inputs['records']} record(s)"
        + (f", attribution strategy {', '.join(inputs['exploration_strategies'])}" if inputs["exploration_strategies"] else "")
        + "."
    )
    if charts:
        out.append(f"Interactive charts: [{html_name}]({html_name}) (self-contained, works offline).")
    out.append("")
    for section in sections:
        out += [f"## {section.title}", ""]
        for paragraph in section.paragraphs:
            out += [paragraph, ""]
        if section.report_text:
            out += [section.report_text.strip(), ""]
        for table in section.tables:
            if table.rows:
                out += [_md_table(table), ""]
        for slug in section.charts:
            chart = by_slug.get(slug)
            if chart is None:
                continue
            if slug in pngs:
                out += [f"![{chart.title}]({pngs[slug]})", ""]
            out += [f"[{chart.title} (interactive)]({html_name}#{slug}) — {chart.caption}", ""]
    return "\n".join(out).rstrip() + "\n"


# ------------------------------------------------------------------------------------ HTML

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1100px;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.5}
h1{font-size:1.6rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.2rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.9rem}th,td{border:1px solid #ddd;padding:.3rem .6rem;text-align:left;vertical-align:top}
td{overflow-wrap:anywhere;min-width:6em}th{background:#f5f5f5}caption{caption-side:top;text-align:left;font-style:italic;padding:.2rem 0}
.report{background:#fafafa;border-left:4px solid #4C78A8;padding:.4rem 1rem}.caption{color:#555;font-size:.9rem}
code{background:#f2f2f2;padding:0 .2rem}
"""


_MD_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")


def _html_inline(text: str) -> str:
    escaped = _MD_LINK.sub(lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', html.escape(text))
    parts = escaped.split("`")
    # odd segments were inside backticks
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)) if len(parts) % 2 else escaped


def _html_prose(text: str) -> str:
    blocks = [b.strip() for b in text.strip().split("\n\n") if b.strip()]
    out = []
    for block in blocks:
        lines = block.splitlines()
        if lines[0].startswith("#"):
            out.append(f"<h3>{_html_inline(lines[0].lstrip('#').strip())}</h3>")
            lines = lines[1:]
            if not lines:
                continue
        if all(line.lstrip().startswith(("- ", "* ")) for line in lines):
            items = "".join(f"<li>{_html_inline(line.lstrip()[2:])}</li>" for line in lines)
            out.append(f"<ul>{items}</ul>")
        else:
            out.append(f"<p>{_html_inline(' '.join(lines))}</p>")
    return "\n".join(out)


def _html_table(table: Table) -> str:
    caption = f"<caption>{_html_inline(table.caption)}</caption>" if table.caption else ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join("<tr>" + "".join(f"<td>{_html_inline(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(content: ReportContent, sections: Sequence[Section], charts: Sequence[Chart]) -> str:
    """One self-contained page: plotly.js inlined once (no CDN), every chart and table."""
    by_slug = {c.slug: c for c in charts}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(content.title)}</title>",
        f"<style>{_CSS}</style>",
    ]
    if charts:
        parts.append(f'<script type="text/javascript">{plotly_js()}</script>')
    parts += ["</head><body>", f"<h1>{html.escape(content.title)}</h1>"]
    inputs = content.inputs
    parts.append(
        f"<p>Input: {html.escape(', '.join(inputs['files']))} — {inputs['records']} record(s).</p>"
    )
    toc = "".join(f'<li><a href="#{s.slug}">{html.escape(s.title)}</a></li>' for s in sections)
    parts.append(f"<ul>{toc}</ul>")
    for section in sections:
        parts.append(f'<h2 id="{section.slug}">{html.escape(section.title)}</h2>')
        parts += [f"<p>{_html_inline(p)}</p>" for p in section.paragraphs]
        if section.report_text:
            parts.append(f'<div class="report">{_html_prose(section.report_text)}</div>')
        for slug in section.charts:
            chart = by_slug.get(slug)
            if chart is None:
                continue
            import plotly.io as pio

            parts.append(
                pio.to_html(chart.figure, full_html=False, include_plotlyjs=False, div_id=slug,
                            config={"displaylogo": False, "responsive": True})
            )
            parts.append(f'<p class="caption">{html.escape(chart.caption)}</p>')
        parts += [_html_table(t) for t in section.tables if t.rows]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------ files


def report_json(content: ReportContent, *, complete: bool, files: dict[str, Any]) -> dict[str, Any]:
    """The JSON output: the reference's ``report`` key first, then what this project adds."""
    return {
        "report": content.report,
        "complete": complete,
        "llm": content.llm,
        "inputs": content.inputs,
        "statistics": content.statistics,
        "unrenderable_cases": content.unrenderable,
        "files": files,
        "notices": content.notices,
    }


def write_documents(folder: str | Path, content: ReportContent, charts: Sequence[Chart], pngs: dict[str, str],
                    *, complete: bool) -> dict[str, str]:
    """Write the JSON, Markdown and HTML files into ``folder`` (atomically); returns their paths."""
    target = Path(folder)
    sections = build_sections(content)
    rel_pngs = {slug: Path(p).relative_to(target).as_posix() if Path(p).is_relative_to(target) else p
                for slug, p in pngs.items()}
    paths = {
        "json": str(target / JSON_NAME),
        "markdown": str(target / MARKDOWN_NAME),
        "html": str(target / HTML_NAME),
    }
    atomic_write_text(paths["html"], render_html(content, sections, charts))
    atomic_write_text(paths["markdown"], render_markdown(content, sections, charts, rel_pngs))
    files = {"markdown": MARKDOWN_NAME, "html": HTML_NAME, "png": rel_pngs}
    atomic_write_json(paths["json"], report_json(content, complete=complete, files=files))
    return paths

