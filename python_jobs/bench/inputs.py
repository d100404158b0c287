"""The synthetic lineage inputs the benchmarks read, in one place.

The lineage benchmarks get their generated files through these two functions. The other areas'
generators are called inside their own benchmark modules: ``facets/bench.py``
(``facets.synthetic.synthetic_events``), ``changelog/bench.py`` (``snapshot_frame``) and
``registry/bench.py`` (``synthetic_events``).
"""

from __future__ import annotations

from pathlib import Path

from python_jobs.lineage.synthetic import SyntheticSpec, write_events
from python_jobs.lineage.synthetic import proposal_example as _proposal_example


def write_lineage_events(events: int, out: Path, first_run: int = 0) -> int:
    """Pipeline events (START + COMPLETE per run, about 3 KB each); ``first_run`` continues an
    earlier file with later runs."""
    return write_events(SyntheticSpec(events=events, first_run=first_run), out)


def proposal_example(out: Path) -> int:
    """One job every 10 minutes for 30 days on a stable 20-column dataset; returns the run count."""
    return _proposal_example(out)
