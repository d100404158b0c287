"""Which latest runs a refresh reads the facets of again, and how their facets are put together
(latest_run_facets.py); the Spark tests are in test_marquez_api (a refresh reads again only the latest runs
whose facets changed, and names are escaped as Spark escapes them)."""

from __future__ import annotations

from python_jobs.marquez_api.latest_run_facets import facets_object, json_string, runs_to_read


def test_without_kept_facets_every_latest_run_is_read():
    assert runs_to_read(["r2", "r1", "r2"], None, {"r9"}) == ["r1", "r2"]


def test_kept_facets_are_read_again_where_published_or_new():
    kept = {"r1": '{"a": {}}', "r2": "", "r3": '{"b": {}}'}
    # r1: unchanged; r2: a winner row published since; r4: a job's new latest run; r5: published, not latest.
    assert runs_to_read(["r1", "r2", "r4"], kept, {"r2", "r5"}) == ["r2", "r4"]
    assert runs_to_read(["r1", "r3"], kept, set()) == []


def test_a_runs_facets_are_one_object_of_its_winners_bodies_in_name_order():
    bodies = {"h1": '{"b":1}', "h2": '{"a":2}', "h3": "{}"}
    members = (("zeta", "h1"), ("Alpha", "h2"), ("é", "h3"), ("gone", "h9"))
    # Byte order of the names: upper case before lower, "é" (two UTF-8 bytes from 0xC3) last; "gone" has no
    # stored body and is left out, as the view's inner join leaves it out.
    assert facets_object(members, bodies) == '{"Alpha":{"a":2},"zeta":{"b":1},"é":{}}'
    assert facets_object((("gone", "h9"),), bodies) == facets_object((), bodies) == ""


def test_names_are_escaped_as_json_strings():
    assert json_string('a"b\\c') == '"a\\"b\\\\c"'
    assert json_string("\n\t\x01\x7f") == '"\\n\\t\\u0001\x7f"'
