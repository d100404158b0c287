"""``bench scale`` as data: one history size's figures, the targets at the largest size against the smallest, the
figures table and the Markdown section of ``BENCHMARKS.md`` (pure: no Spark)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from python_jobs.tools.bench.report import Area, Cost, Row, Target, ratio, render_area

SECTION_START = "<!-- bench scale: start (written by `python -m python_jobs bench scale`) -->"
SECTION_END = "<!-- bench scale: end -->"
SECTION_TITLE = "History scale"

GIB = 1024**3
INCREMENT_TARGET = Target(1.25)
NOOP_TARGET = Target(5.0, on_measured=True, unit=" s")
LATENCY_TARGET = Target(50, on_measured=True, unit=" ms")
MEMORY_TARGET = Target(4.0, on_measured=True, unit=" GiB")
REFRESH_TARGET = Target(5.0, on_measured=True, unit=" s")
# Events of the batch held pending in the live overlay while its view is timed: enough to touch every job of the
# generator's pipeline (a job's whole history was rebuilt per pending run's job until stop 59).
LIVE_PENDING = 2_000
INGEST_CPU_TARGET = Target(1.5)


@dataclass(frozen=True)
class Latency:
    p50_ms: float
    p95_ms: float
    max_ms: float


@dataclass(frozen=True)
class ScaleResult:
    """One history size. CPU seconds are the JVM's user + system time; memory is the Python process's resident
    set, which holds the read API's snapshot; the warehouse bytes are every file under the size's schemas after
    the +1% batch was built."""

    events: int
    input_bytes: int
    floor: Cost
    ingest: Cost
    accepted: int
    rejected: int
    first_build_seconds: float
    api_load_seconds: float
    api_rss_bytes: int
    api_rss_growth_bytes: int
    counts: str
    latency: dict[str, Latency]
    increment_events: int
    increment_ingest_seconds: float
    increment_build_seconds: float
    refresh_seconds: float
    noop_build_seconds: float
    noop_unchanged: bool
    warehouse_bytes: int
    jvm_peak_rss_bytes: int
    load_before: str
    load_after: str
    # The two parsers' floors on the same file (parsers.py): CPU of the JVM and its Python workers.
    text_floor: Cost | None = None
    python_floor: Cost | None = None
    # The refresh's slowest parts (snapshot.py's ``describe_laps``): what grows with history.
    refresh_parts: str = "-"
    # Seconds to lay the first ``LIVE_PENDING`` events of the batch, accepted but not built, over the snapshot
    # (the live view the API answers from between builds: live.py); None where not measured.
    live_view_seconds: float | None = None
    # The process's resident set once the refresh after the batch build returned, and its peak during that refresh
    # (the old snapshot serves while the new one is built); None where not measured.
    api_rss_after_refresh_bytes: int | None = None
    api_refresh_peak_rss_bytes: int | None = None

    @property
    def ingest_rate(self) -> float:
        return self.events / self.ingest.wall_seconds

    @property
    def floor_rate(self) -> float:
        return self.events / self.floor.wall_seconds

    @property
    def ingest_cpu_ratio(self) -> float | None:
        return ratio(self.ingest.cpu_seconds, self.floor.cpu_seconds)

    @property
    def input_bytes_per_event(self) -> float:
        return self.input_bytes / self.events

    @property
    def warehouse_bytes_per_event(self) -> float:
        return self.warehouse_bytes / (self.events + self.increment_events)


def _ms(value: Latency) -> str:
    return f"{value.p50_ms:,.1f} / {value.p95_ms:,.1f}"


def _s(value: float) -> str:
    return f"{value:,.1f} s"


def _mb(value: float) -> str:
    return f"{value / 1e6:,.1f}"


def _gib(value: float) -> str:
    return f"{value / GIB:,.2f} GiB"


def _parser_floors(result: ScaleResult) -> str:
    text, python = result.text_floor, result.python_floor
    if text is None or python is None or text.tree_cpu_seconds is None or python.tree_cpu_seconds is None:
        return "-"
    return f"{text.tree_cpu_seconds:,.1f} / {python.tree_cpu_seconds:,.1f}"


def _refresh_memory(result: ScaleResult) -> str:
    after, peak = result.api_rss_after_refresh_bytes, result.api_refresh_peak_rss_bytes
    if after is None:
        return "-"
    return _gib(after) + ("" if peak is None else f" ({_gib(peak)})")


def figure_rows(results: list[ScaleResult], cases: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """The figures table: one row per figure, one cell per size (in ``results``' order)."""

    def row(name: str, cell: Callable[[ScaleResult], str]) -> tuple[str, list[str]]:
        return name, [cell(result) for result in results]

    rows = [
        row("input NDJSON MB (bytes per event)", lambda r: f"{_mb(r.input_bytes)} ({r.input_bytes_per_event:,.0f})"),
        row("floor (from_json + Parquet): wall s (events/s)", lambda r: f"{_s(r.floor.wall_seconds)} "
            f"({r.floor_rate:,.0f})"),
        row("ingest: wall s (events/s)", lambda r: f"{_s(r.ingest.wall_seconds)} ({r.ingest_rate:,.0f})"),
        row("ingest / floor JVM CPU s (ratio)", lambda r: f"{r.ingest.cpu_seconds:,.1f} / "
            f"{r.floor.cpu_seconds:,.1f} ({r.ingest_cpu_ratio or 0:,.2f})"),
        row("parse floor CPU s, JVM + Python workers: from_json / orjson (mapInArrow)", _parser_floors),
        row("read / accepted / rejected", lambda r: f"{r.events:,} / {r.accepted:,} / {r.rejected:,}"),
        row("first build s (events/s)", lambda r: f"{_s(r.first_build_seconds)} "
            f"({r.events / r.first_build_seconds:,.0f})"),
        row("read API load s", lambda r: _s(r.api_load_seconds)),
        row("read API process RSS after load (growth)", lambda r: f"{_gib(r.api_rss_bytes)} "
            f"(+{_gib(r.api_rss_growth_bytes)})"),
        row("jobs / datasets / runs", lambda r: r.counts),
    ]
    rows += [row(f"{case}: p50 / p95 ms", lambda r, case=case: _ms(r.latency[case])) for case in cases]
    rows += [
        row("+batch events: ingest s", lambda r: f"+{r.increment_events:,}: {_s(r.increment_ingest_seconds)}"),
        row("+batch events: build s", lambda r: _s(r.increment_build_seconds)),
        row("read API refresh after the +batch build", lambda r: _s(r.refresh_seconds)),
        row("read API refresh: slowest parts s", lambda r: r.refresh_parts),
        row("read API process RSS after the refresh (peak during it)", _refresh_memory),
        row(f"read API live view of {LIVE_PENDING:,} pending events s",
            lambda r: "-" if r.live_view_seconds is None else f"{r.live_view_seconds:.2f}"),
        row("no-new-events build s (tables unchanged)", lambda r: f"{_s(r.noop_build_seconds)} "
            f"({'yes' if r.noop_unchanged else 'NO'})"),
        row("warehouse on disk MB (bytes per event)", lambda r: f"{_mb(r.warehouse_bytes)} "
            f"({r.warehouse_bytes_per_event:,.0f})"),
        row("JVM peak RSS", lambda r: _gib(r.jvm_peak_rss_bytes)),
        row("load average before / after (1 min)", lambda r: f"{r.load_before.split(' / ')[0]} / "
            f"{r.load_after.split(' / ')[0]}"),
    ]
    return rows


def render_table(results: list[ScaleResult], cases: tuple[str, ...]) -> str:
    """The figures table as Markdown (also what the command prints)."""
    header = ["figure", *(f"{result.events:,} events" for result in results)]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(results)]
    lines += ["| " + " | ".join([name, *cells]) + " |" for name, cells in figure_rows(results, cases)]
    return "\n".join(lines)


def scale_targets(results: list[ScaleResult], cases: tuple[str, ...]) -> Area:
    """Each target at the largest history against the smallest of the same run: met or missed with both
    figures. With one size the ratios compare it with itself."""
    small = min(results, key=lambda r: r.events)
    large = max(results, key=lambda r: r.events)
    area = Area(f"{SECTION_TITLE}: targets at {large.events:,} events", f"at {small.events:,} events")
    area.add(Row(f"+{large.increment_events:,}-event batch: build", _s(large.increment_build_seconds),
                 _s(small.increment_build_seconds),
                 ratio(large.increment_build_seconds, small.increment_build_seconds), INCREMENT_TARGET))
    area.add(Row("no-new-events build", _s(large.noop_build_seconds), _s(small.noop_build_seconds),
                 ratio(large.noop_build_seconds, small.noop_build_seconds), NOOP_TARGET, large.noop_build_seconds))
    for case in cases:
        mine, theirs = large.latency[case], small.latency[case]
        area.add(Row(f"read API {case}: p95", f"{mine.p95_ms:,.1f} ms", f"{theirs.p95_ms:,.1f} ms",
                     ratio(mine.p95_ms, theirs.p95_ms), LATENCY_TARGET, mine.p95_ms))
    area.add(Row("read API process RSS after load", _gib(large.api_rss_bytes), _gib(small.api_rss_bytes),
                 ratio(large.api_rss_bytes, small.api_rss_bytes), MEMORY_TARGET, large.api_rss_bytes / GIB))
    area.add(Row("read API refresh after the batch build", _s(large.refresh_seconds), _s(small.refresh_seconds),
                 ratio(large.refresh_seconds, small.refresh_seconds), REFRESH_TARGET, large.refresh_seconds))
    area.add(Row("ingest JVM CPU against the floor's (same file)", f"{large.ingest_cpu_ratio or 0:,.2f}x",
                 f"{small.ingest_cpu_ratio or 0:,.2f}x", large.ingest_cpu_ratio, INGEST_CPU_TARGET))
    area.notes.append(
        "Ratios: the largest history's figure over the smallest's, except the ingest CPU, whose ratio (and "
        "target) is the ingest's JVM CPU over the floor's on the largest file; the other targets apply to the "
        "largest history's figure itself."
    )
    return area


@dataclass(frozen=True)
class SectionInfo:
    date: str
    command: str
    machine: list[tuple[str, str]]
    smoke: bool
    lean: bool
    requests: int
    # The session's settings that bound a size's memory and parallelism, e.g. "local[*], driver memory 8g, ...".
    spark: str = ""


def render_section(info: SectionInfo, results: list[ScaleResult], cases: tuple[str, ...],
                   plots: list[tuple[str, str]]) -> str:
    """The section between the markers: the figures per size, the targets, the plots."""
    machine = ", ".join(f"{name} {value}" for name, value in info.machine)
    shape = ("lean events (8 columns per output, renamed rather than added at each schema change, no "
             "descriptions)" if info.lean else "full events (22 columns and more, with descriptions)")
    batch = results[-1].increment_events if results else 0
    lines = [SECTION_START, f"## {SECTION_TITLE}", ""]
    if info.smoke:
        lines += ["**Smoke run**: small sizes or a loaded machine; the figures show the section's shape, not the "
                  "project's speed.", ""]
    lines += [
        f"- Date: {info.date}; command: `{info.command}`; machine: {machine}."
        + (f" Spark: {info.spark}." if info.spark else ""),
        f"- The generator's pipeline shape (200 jobs, two inputs and one output each, START + COMPLETE per run, a "
        f"schema version every 200 runs of a job), {shape}. Sizes one after another in one Spark session, each on "
        "its own schema prefix, dropped after it is measured.",
        "- Per size: the floor (Spark `from_json` + Parquet write of the file) and the ingest; the same floor with "
        "the ingest's text-parse schema against `orjson` parsing the lines in Python workers (`mapInArrow`), by "
        "the CPU of the JVM and its workers (the faster of the two is the ingest's parser); the first build, "
        "the batch build and the no-new-events build of what the read API reads (the lineage core, facets and "
        f"column lineage, without tests); the batch is the same {batch:,} events (1% of the largest history) "
        "on every size, continuing its runs. The read API is loaded in this process (the resident-set growth is "
        f"its snapshot), then {info.requests} requests of each kind over HTTP on loopback, one at a time after a "
        f"warm-up; the first {LIVE_PENDING:,} events of the batch are accepted into its live overlay and the view "
        "laid over the snapshot is timed before the batch is ingested; `refresh()` is timed after the batch build.",
        "- The figures are meant for an idle machine: the load average before and after each size is in the "
        "table.",
        "",
        render_table(results, cases),
        "",
        *render_area(scale_targets(results, cases)),
    ]
    if plots:
        lines += [f"![{caption}]({path})" + "\n" for caption, path in plots]
    lines.append(SECTION_END)
    return "\n".join(lines)


def replace_section(text: str, section: str) -> str:
    """``text`` with its scale section (between the markers) replaced by ``section``, or ``section`` appended
    when it has none; the rest stays as it was."""
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    if start < 0 or end < start:
        return text.rstrip("\n") + "\n\n" + section + "\n"
    return text[:start] + section + text[end + len(SECTION_END):]


def existing_section(text: str) -> str | None:
    """The scale section of ``text``, markers included, if it has one."""
    start, end = text.find(SECTION_START), text.find(SECTION_END)
    if start < 0 or end < start:
        return None
    return text[start:end + len(SECTION_END)]
