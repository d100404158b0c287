"""The report's pictures (matplotlib, Agg backend): cost against history size, round times, and ``bench scale``'s
figures against history size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def history_cost_plot(small: Any, large: Any, out: Path) -> Path:
    """Build seconds against history size: the first build grows with it, the +1% and no-op must not."""
    sizes = [small.events, large.events]
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    series = (
        ("first build (whole history)", [small.build_seconds, large.build_seconds], "o-"),
        (f"+{large.increment_events:,}-event batch build", [small.increment_build_seconds,
                                                         large.increment_build_seconds], "s-"),
        ("no-new-events build", [small.noop_build_seconds, large.noop_build_seconds], "^-"),
    )
    for label, values, style in series:
        axes.plot(sizes, values, style, label=label)
    _history_axes(axes, sizes, "dbt run seconds", "Lineage build cost against history size")
    return _save(figure, axes, out)


def _history_axes(axes: Any, sizes: list[int], ylabel: str, title: str) -> None:
    """History size on a log x axis, one tick per measured size; y from zero."""
    axes.set_xscale("log")
    axes.minorticks_off()
    axes.set_xticks(sizes, [f"{size:,}" for size in sizes])
    axes.set_ylim(bottom=0)
    axes.set_xlabel("events in the history")
    axes.set_ylabel(ylabel)
    axes.set_title(title)


def changelog_rounds_plot(report: Any, out: Path) -> Path:
    rounds = [result.round_no for result in report.rounds]
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for mode, label, style in (("incremental", "with the state table", "o-"),
                               ("rebuild", "state rebuilt from the changelog", "s--")):
        axes.plot(rounds, [result.model_seconds[mode] for result in report.rounds], style, label=label)
    axes.set_xticks(rounds)
    axes.set_xlabel("round (0 = first snapshot)")
    axes.set_ylabel("model seconds")
    axes.set_title(f"Changelog round times, {report.config.rows:,} rows per snapshot")
    axes.set_ylim(bottom=0)
    return _save(figure, axes, out)


def size_plot(sizes: list[int], series: list[tuple[str, list[float]]], title: str, ylabel: str, out: Path) -> Path:
    """One figure against history size (log x): a line per series, a point per size."""
    figure, axes = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for (label, values), style in zip(series, ("o-", "s-", "^-", "D-", "v--", "x--"), strict=False):
        axes.plot(sizes, values, style, label=label)
    _history_axes(axes, sizes, ylabel, title)
    return _save(figure, axes, out)


def _save(figure: Any, axes: Any, out: Path) -> Path:
    """The finish both plots share: grid, legend, tight layout, written to ``out``."""
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out)
    plt.close(figure)
    return out
