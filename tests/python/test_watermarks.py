"""When kept rows may be extended by the rows past their mark (watermarks.py): only over appends."""

from __future__ import annotations

from python_jobs.marquez_api.watermarks import Watermark, can_extend


def test_kept_rows_extend_only_over_tables_that_grew_by_appends():
    kept = Watermark(10, frozenset({"f1", "f2"}))
    assert can_extend(kept, Watermark(12, frozenset({"f1", "f2", "f3"})))
    assert can_extend(kept, Watermark(10, frozenset({"f1", "f2"})))
    assert not can_extend(None, Watermark(12, frozenset({"f1"})))
    assert not can_extend(kept, Watermark(9, frozenset({"f1", "f2", "f3"})))  # the mark went back: a rebuild
    assert not can_extend(kept, Watermark(12, frozenset({"f1", "f3"})))  # a file is gone: compaction, retention
    assert not can_extend(kept, Watermark(None, frozenset({"f1", "f2"})))  # no mark now
    assert not can_extend(Watermark(None, frozenset({"f1"})), Watermark(12, frozenset({"f1"})))  # none then
