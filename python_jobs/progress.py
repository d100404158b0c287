"""Progress of long steps: a live bar with counts, elapsed time and rate on a terminal (rich), and plain
lines elsewhere (CI logs get a start line, a line every ``PLAIN_EVERY_SECONDS`` and a result line, never
cursor movements or bars)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

PLAIN_EVERY_SECONDS = 30.0
PLAIN_WIDTH = 150


def rate_text(count: float, seconds: float, unit: str) -> str:
    return f"{count / seconds:,.1f} {unit}/s" if seconds > 0 and count else f"- {unit}/s"


def result_line(title: str, count: int, unit: str, seconds: float, note: str = "") -> str:
    done = f"{count:,} {unit} in {seconds:,.1f}s" if unit else f"{seconds:,.1f}s"
    rate = f" ({rate_text(count, seconds, unit)})" if unit and count > 1 else ""
    return f"{title}: {done}{rate}{'; ' + note if note else ''}"


class RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        unit = task.fields.get("unit", "")
        return Text(rate_text(task.completed, task.elapsed or 0.0, unit), style="progress.data.speed")


def default_console() -> Console:
    """A console for stdout; logs (not a terminal) get a fixed width wide enough for the summary tables."""
    probe = Console()
    return Console(highlight=False, width=None if probe.is_terminal else PLAIN_WIDTH)


@dataclass
class Step:
    """A running step: ``advance`` as items finish, ``finish`` with the final count and a note."""

    title: str
    unit: str
    interactive: bool
    console: Console
    progress: Progress | None = None
    task_id: int | None = None
    started: float = field(default_factory=time.monotonic)
    count: int = 0
    total: int | None = None
    note: str = ""
    _last_plain: float = field(default_factory=time.monotonic)

    def set_total(self, total: int) -> None:
        self.total = total
        if self.progress is not None and self.task_id is not None:
            self.progress.update(self.task_id, total=total)

    def advance(self, amount: int = 1) -> None:
        self.count += amount
        if self.progress is not None and self.task_id is not None:
            self.progress.update(self.task_id, completed=self.count)
        elif not self.interactive and time.monotonic() - self._last_plain >= PLAIN_EVERY_SECONDS:
            self._last_plain = time.monotonic()
            of = f"/{self.total:,}" if self.total else ""
            elapsed = time.monotonic() - self.started
            self.console.print(
                f"   {self.title}: {self.count:,}{of} {self.unit}, {elapsed:,.0f}s", highlight=False, markup=False,
                soft_wrap=True,
            )

    def finish(self, count: int | None = None, note: str = "") -> None:
        if count is not None:
            self.count = count
        self.note = note

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


class Reporter:
    def __init__(self, console: Console | None = None):
        self.console = console or default_console()

    @property
    def interactive(self) -> bool:
        return self.console.is_terminal and not self.console.is_dumb_terminal

    def line(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    @contextmanager
    def step(self, title: str, unit: str, total: int | None = None) -> Iterator[Step]:
        step = Step(title, unit, self.interactive, self.console, total=total)
        if self.interactive:
            step.progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[unit]}"), TimeElapsedColumn(), RateColumn(),
                console=self.console, transient=True,
            )
            step.progress.start()
            step.task_id = step.progress.add_task(title, total=total, unit=unit)
        else:
            self.line(f"== {title}")
        try:
            yield step
        finally:
            if step.progress is not None:
                step.progress.stop()
        mark = "✓ " if self.interactive else "   "
        self.line(mark + result_line(title, step.count, unit, step.seconds, step.note))
