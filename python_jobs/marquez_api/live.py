"""The read API's live overlay: events the collector acknowledged, shown before the build has them.

The collector calls ``accept`` with each acknowledged body (on its event loop, after the durable
append; it only numbers the body and queues it). Readers call ``view``: the pending bodies are
parsed and folded then (on the reader's thread), and the current snapshot with the folded events
laid over it (``live_view.merged_snapshot``) is built once per change and shared.

Which events a new snapshot includes: the build loop calls ``begin_round`` *before* the collector
seals its open landing file, so every event numbered up to that mark is in a sealed file the
round ingests; a new event lands in the next open file and gets a higher number. After a round
that succeeded (ingest and build), ``install(snapshot, absorbed=True)`` drops the events up to the
round's mark; after a failed one it keeps them all (the next round retries the build). An event
numbered past the mark but sealed in time stays one round longer: merged with a snapshot that has
it already, it changes nothing (every rule is a min, a max or a set union).

Memory: the pending events are those the next successful round absorbs, at most ``max_pending``
(past that an event is shown only after the build, and counted in ``overflow``).
"""

from __future__ import annotations

import threading
import time
from collections import deque

from python_jobs.marquez_api.live_events import Folded, PendingEvent, fold_events, parse_pending
from python_jobs.marquez_api.live_view import merged_snapshot
from python_jobs.marquez_api.snapshot import Snapshot

DEFAULT_MAX_PENDING = 200_000
REBUILD_FACTOR = 3.0


class LiveOverlay:
    def __init__(self, base: Snapshot | None = None, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.max_pending = max_pending
        self.overflow = 0
        self._base = base or Snapshot()
        self._queued: deque[tuple[int, bytes]] = deque()  # accepted, not parsed yet
        self._pending: list[PendingEvent] = []  # parsed, in accept order
        self._folded = Folded()
        self._last_seq = 0
        self._round_mark: int | None = None
        self._accept_lock = threading.Lock()  # numbering and queueing: microseconds
        self._lock = threading.Lock()  # the pending events, the fold and the cached view
        self._view: Snapshot | None = None
        self._changed = False  # events folded since the view was built
        self._next_build = 0.0

    # -- the collector's side --------------------------------------------------------------

    def accept(self, body: bytes) -> None:
        """One acknowledged event body (``on_accepted``)."""
        with self._accept_lock:
            if len(self._queued) + len(self._pending) >= self.max_pending:
                self.overflow += 1
                return
            self._last_seq += 1
            self._queued.append((self._last_seq, body))

    # -- the build loop's side -------------------------------------------------------------

    def begin_round(self) -> None:
        """Marks the events the round will include: call before the landing file is sealed."""
        with self._accept_lock:
            self._round_mark = self._last_seq

    def install(self, base: Snapshot, absorbed: bool = False) -> None:
        """Switches to a new snapshot; with ``absorbed`` (the round since ``begin_round`` ingested
        and built), drops the events up to the round's mark."""
        with self._lock:
            self._drain()
            mark = self._round_mark if absorbed else None
            if mark is not None:
                self._pending = [e for e in self._pending if e.seq > mark]
                self._folded = fold_events(self._pending)
            self._round_mark = None
            self._base = base
            self._view = None
            self._changed = False

    def replace_base(self, base: Snapshot) -> None:
        """Switches to ``base`` keeping every pending event and the round's mark (an API write
        re-curated the same build's snapshot)."""
        with self._lock:
            self._base = base
            self._view = None

    # -- the readers' side -----------------------------------------------------------------

    @property
    def base(self) -> Snapshot:
        return self._base

    def pending_count(self) -> int:
        return len(self._pending) + len(self._queued)

    def view(self) -> Snapshot:
        """The snapshot with the pending events over it (the same object until the next change).
        Building it costs the size of the pending events: after a change, the next one is built
        once three times the last build's time has passed, so readers spend at most about a
        quarter of their time on it however fast events arrive (microseconds while few are pending)."""
        with self._lock:
            if self._queued:
                self._drain()
                self._changed = True
            now = time.monotonic()
            if self._view is None or (self._changed and now >= self._next_build):
                self._view = merged_snapshot(self._base, self._folded)
                self._changed = False
                self._next_build = now + REBUILD_FACTOR * (time.monotonic() - now)
            return self._view

    def expedite(self) -> None:
        """The next ``view`` is built at once if anything changed. A write's own answer calls it: the
        rebuild limit spreads the cost of other clients' events over readers, but a client that just
        wrote must read its write (under load the limit can defer a rebuild by tens of milliseconds)."""
        with self._lock:
            self._next_build = 0.0

    def _drain(self) -> None:
        while self._queued:
            seq, body = self._queued.popleft()
            event = parse_pending(body, seq)
            if event is not None:
                self._pending.append(event)
                self._folded.add(event)
