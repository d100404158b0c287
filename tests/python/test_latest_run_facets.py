"""Which latest runs a refresh reads the facets of again (latest_run_facets.py); the Spark test is in
test_marquez_api (test_a_refresh_reads_again_only_the_latest_runs_whose_facets_changed)."""

from __future__ import annotations

from python_jobs.marquez_api.latest_run_facets import runs_to_read


def test_without_kept_facets_every_latest_run_is_read():
    assert runs_to_read(["r2", "r1", "r2"], None, {"r9"}) == ["r1", "r2"]


def test_kept_facets_are_read_again_where_published_or_new():
    kept = {"r1": '{"a": {}}', "r2": "", "r3": '{"b": {}}'}
    # r1: unchanged; r2: a winner row published since; r4: a job's new latest run; r5: published, not latest.
    assert runs_to_read(["r1", "r2", "r4"], kept, {"r2", "r5"}) == ["r2", "r4"]
    assert runs_to_read(["r1", "r3"], kept, set()) == []
