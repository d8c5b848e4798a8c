"""The dashboard: one self-contained HTML page made from a roll-up and its comparison.

Self-contained means it loads nothing: CSS and the small script are inline, charts are inline SVG,
there is no URL to any other host, so the file opens anywhere (a CI artefact, an air-gapped laptop).
Sections have stable ids (summary, rules, grid, divergences, crashes, latency, chaos, changes, history,
runs)
that links and tests rely on."""

from __future__ import annotations

from .compare import Comparison
from .markup import esc
from .model import Rollup
from .sections_chaos import chaos_section
from .sections_divergences import crashes_section, divergences_section
from .sections_grid import grid_section
from .sections_overview import (
    changes_section,
    exchange_split,
    history_section,
    runs_section,
    summary_section,
)
from .sections_results import latency_section
from .sections_rules import rules_section
from .theme import CSS, SCRIPT

__all__ = ["SECTION_IDS", "render_dashboard"]

SECTION_IDS = (
    "summary",
    "rules",
    "grid",
    "divergences",
    "crashes",
    "latency",
    "chaos",
    "changes",
    "history",
    "runs",
)


def _nav(rollup: Rollup, comparison: Comparison) -> str:
    counts = {
        "rules": len(rollup.rule_status),
        "grid": len(rollup.grid),
        "divergences": len(rollup.divergences),
        "crashes": len(rollup.crashes),
        "latency": len(rollup.latency),
        "chaos": len(rollup.chaos),
        "changes": len(comparison.new_divergences) + len(comparison.fixed_divergences),
        "history": len(comparison.history),
        "runs": len(rollup.runs),
    }
    links = "".join(
        f'<a href="#{name}">{name.capitalize()}'
        + (f'<span class="count">{counts[name]:,}</span>' if name in counts else "")
        + "</a>"
        for name in SECTION_IDS
    )
    return f'<nav class="sections" aria-label="sections"><div class="wrap">{links}</div></nav>'


def render_dashboard(rollup: Rollup, comparison: Comparison, *, title: str, generated_at: str) -> str:
    """The whole page as one string."""
    new = {d.signature for d in comparison.new_divergences}
    sections = (
        summary_section(rollup, comparison),
        rules_section(rollup, comparison),
        grid_section(rollup.grid, rollup.offered),
        divergences_section(rollup.divergences, new, rollup.grid),
        crashes_section(rollup.crashes),
        latency_section(rollup.latency),
        chaos_section(rollup.chaos, rollup.chaos_felt),
        changes_section(rollup, comparison),
        history_section(comparison),
        runs_section(rollup),
    )
    split = exchange_split(rollup)
    meta = (
        f"generated {generated_at} · {len(rollup.runs):,} runs · {rollup.exchanges:,} exchanges "
        f"({split['diff']:,} compared, {split['chaos']:,} chaos operations, {split['other']:,} other)"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="kconform"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{esc(title)}</h1><div class="meta">{esc(meta)}</div>'
        f"</div></header>{_nav(rollup, comparison)}"
        f'<main><div class="wrap">{"".join(sections)}</div></main>'
        '<footer><div class="wrap">Written by kconform. Machine-readable beside this page: '
        '<a href="summary.json">summary.json</a> (give this folder as <code>--previous</code> to a later '
        'report) and <a href="junit.xml">junit.xml</a>.</div></footer>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )
