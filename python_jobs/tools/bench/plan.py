"""What ``bench all --size N`` runs: the areas, the named sizes and what one size means for each area.
Light on purpose: the CLI reads it to build ``bench all --help``."""

from __future__ import annotations

from dataclasses import dataclass

# "api" and "sql" run on the lineage area's largest warehouse, before it is dropped: they need "lineage". "sql"
# starts the session with the SQL endpoint's settings (its guard, the FAIR scheduler) for the whole run. "scale"
# (``bench scale`` at the plan's three sizes, its own section of the report) takes hours: only when asked for.
ALL_AREAS = ("lineage", "api", "sql", "facets", "changelog", "registry", "collector", "scale")
DEFAULT_AREAS = tuple(area for area in ALL_AREAS if area != "scale")
DEFAULT_SIZE = 1_000_000
NAMED_SIZES = {"small": 20_000, "tiny": 2_000}


@dataclass(frozen=True)
class Plan:
    """What one ``--size`` means for each area: ``size`` events in the large lineage history."""

    size: int

    @property
    def small_history(self) -> int:
        return max(self.size // 10, 200)

    @property
    def increment(self) -> int:
        return max(self.size // 100, 20)

    @property
    def facet_events(self) -> int:
        return max(self.size // 10, 1_000)

    @property
    def facet_large_bytes(self) -> int:
        return 2 * 1024 * 1024 if self.size >= 100_000 else 128 * 1024

    @property
    def changelog_rows(self) -> int:
        return self.size

    @property
    def registry_events(self) -> int:
        return max(self.size // 50, 100)

    @property
    def scale_sizes(self) -> tuple[int, int, int]:
        """``bench scale``'s histories: 1M, 3M and 10M events at the default size."""
        return self.size, 3 * self.size, 10 * self.size


def parse_bench_size(text: str) -> int:
    """``--size`` of ``bench all``: a number of events (``1,000,000``, ``20_000``) or a named size."""
    if text in NAMED_SIZES:
        return NAMED_SIZES[text]
    value = int(text.replace("_", "").replace(",", ""))
    if value < 1_000:
        raise ValueError("--size must be at least 1000 events (or small / tiny)")
    return value
