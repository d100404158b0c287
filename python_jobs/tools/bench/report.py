"""The benchmark report as data, and its Markdown rendering (pure: no Spark)."""

from __future__ import annotations

from dataclasses import dataclass, field

MISSING = "-"


@dataclass(frozen=True)
class Cost:
    """What a measured step took: wall-clock seconds, the JVM's user + system CPU seconds and, where
    Python workers do part of the work, the CPU of the JVM and its workers together."""

    wall_seconds: float
    cpu_seconds: float
    tree_cpu_seconds: float | None = None


@dataclass(frozen=True)
class Target:
    """A restated target: ``ratio`` (or the measured value when ``on_measured``) at most/least ``limit``."""

    limit: float
    at_most: bool = True
    on_measured: bool = False
    unit: str = "x"  # appended to the limit: "x", " s", " events/s"

    def describe(self) -> str:
        sign = "≤" if self.at_most else "≥"
        return f"{sign} {self.limit:,g}{self.unit}"

    def met(self, value: float) -> bool:
        return value <= self.limit if self.at_most else value >= self.limit


@dataclass(frozen=True)
class Row:
    """One figure, the baseline or peer measured in the same run, and their ratio (figure / baseline)."""

    figure: str
    measured: str
    baseline: str = MISSING
    ratio: float | None = None
    target: Target | None = None
    value: float | None = None  # the number the target applies to when it is not the ratio

    def checked(self) -> float | None:
        if self.target is None:
            return None
        return self.value if self.target.on_measured else self.ratio

    def verdict(self) -> str:
        if self.target is None:
            return MISSING
        checked = self.checked()
        if checked is None:
            return "not measured"
        return "met" if self.target.met(checked) else "**missed**"


@dataclass
class Area:
    title: str
    baseline_name: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    def add(self, row: Row) -> None:
        self.rows.append(row)


@dataclass(frozen=True)
class RunInfo:
    title: str
    command: str
    date: str
    machine: list[tuple[str, str]]
    versions: list[tuple[str, str]]
    load_before: str
    load_after: str
    smoke: bool


def ratio(value: float | None, baseline: float | None) -> float | None:
    if value is None or baseline is None or baseline == 0:
        return None
    return value / baseline


def seconds(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.1f} s"


def rate(events: int, value: float | None) -> str:
    return MISSING if not value else f"{events / value:,.0f} events/s"


def _ratio_text(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value:,.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.2g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_area(area: Area) -> list[str]:
    lines = [f"## {area.title}", ""]
    if area.error:
        lines += [f"Not measured: {area.error}", ""]
        return lines
    lines += [
        f"| figure | measured | {area.baseline_name} | ratio | target | |",
        "|---|---:|---:|---:|---|---|",
    ]
    for row in area.rows:
        target = row.target.describe() if row.target else MISSING
        cells = (row.figure, row.measured, row.baseline, _ratio_text(row.ratio), target, row.verdict())
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    lines.append("")
    lines += [f"- {note}" for note in area.notes]
    if area.notes:
        lines.append("")
    return lines


def missed_targets(areas: list[Area]) -> list[str]:
    return [f"{area.title}: {row.figure}" for area in areas for row in area.rows if row.verdict() == "**missed**"]


def render_report(
    info: RunInfo, areas: list[Area], timings: list[tuple[str, float]], plots: list[tuple[str, str]]
) -> str:
    """``timings``: the run time of each part of the run; ``plots``: (caption, path relative to the report)."""
    lines = [f"# {info.title}", ""]
    if info.smoke:
        lines += [
            "**Smoke run**: measured at a small size, on some areas only or on a loaded machine; the figures",
            "show the report's shape, not the project's speed.",
            "",
        ]
    lines += [
        f"- Date: {info.date}",
        f"- Command: `{info.command}`",
        f"- Load average (1/5/15 min) before: {info.load_before}; after: {info.load_after}",
        "",
        "| machine | |",
        "|---|---|",
        *[f"| {name} | {_cell(value)} |" for name, value in info.machine],
        "",
        "| version | |",
        "|---|---|",
        *[f"| {name} | {_cell(value)} |" for name, value in info.versions],
        "",
        "Each ratio is the measured figure divided by the baseline or peer beside it, both measured in this",
        "run on the same input. CPU seconds are the JVM's user + system time (DuckDB's: this process's).",
        "",
        "| part of the run | run time |",
        "|---|---:|",
        *[f"| {part} | {seconds(value)} |" for part, value in timings],
        "",
    ]
    for area in areas:
        lines += render_area(area)
    if plots:
        lines += ["## Plots", ""]
        lines += [f"![{caption}]({path})" + "\n" for caption, path in plots]
    missed = missed_targets(areas)
    lines += ["## Targets missed", ""]
    lines += [f"- {item}" for item in missed] if missed else ["None."]
    lines.append("")
    return "\n".join(lines)
