"""Every dbt model declares its grain (issue 28): a key test, or a one-line reason why it has no key.

No Spark and no dbt: reads the model files and the YAML docs next to them, so a new model cannot land
without a uniqueness test (a column `unique`, a `unique_combination`, ...) or a `meta.grain` reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from python_jobs.settings import PROJECT_DIR

MODELS_DIR = PROJECT_DIR / "models"
MACROS_DIR = PROJECT_DIR / "macros"

# Generic tests that fail on a duplicate key. A custom one must exist under macros/ (checked below).
BUILTIN_KEY_TESTS = {"unique"}
CUSTOM_KEY_TESTS = {
    "unique_combination",  # the columns together are unique
    "single_row",  # a one-row summary: the whole model is the key
    "changelog_gapless_offsets",  # offsets unique and gapless: count = distinct count = max + 1
    "sequence_is_gapless",  # unique within each group_by group
}
KEY_TESTS = BUILTIN_KEY_TESTS | CUSTOM_KEY_TESTS


def _model_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for path in sorted(MODELS_DIR.rglob("*")):
        if path.suffix in {".sql", ".py"} and path.is_file():
            assert path.stem not in files, f"two model files named {path.stem}: {files[path.stem]} and {path}"
            files[path.stem] = path
    return files


def _model_entries() -> dict[str, tuple[Path, dict[str, Any]]]:
    entries: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in sorted([*MODELS_DIR.rglob("*.yml"), *MODELS_DIR.rglob("*.yaml")]):
        document = yaml.safe_load(path.read_text()) or {}
        for entry in document.get("models") or []:
            name = entry["name"]
            assert name not in entries, f"model {name} is documented twice: {entries[name][0]} and {path}"
            entries[name] = (path, entry)
    return entries


def _test_name(test: Any) -> str:
    """`unique`, `{unique_combination: {...}}` or `{test_name: x, ...}` -> the generic test's bare name."""
    if isinstance(test, str):
        name = test
    elif isinstance(test, dict) and "test_name" in test:
        name = test["test_name"]
    elif isinstance(test, dict) and len(test) == 1:
        name = next(iter(test))
    else:
        raise AssertionError(f"unreadable test entry {test!r}")
    return name.rsplit(".", 1)[-1]  # package-qualified names (lineage_warehouse.unique_combination)


def _tests(entry: dict[str, Any]) -> Iterator[str]:
    for test in [*(entry.get("data_tests") or []), *(entry.get("tests") or [])]:
        yield _test_name(test)
    for column in entry.get("columns") or []:
        for test in [*(column.get("data_tests") or []), *(column.get("tests") or [])]:
            yield _test_name(test)


def _grain_reason(entry: dict[str, Any]) -> Any:
    for meta in ((entry.get("config") or {}).get("meta"), entry.get("meta")):
        if meta and "grain" in meta:
            return meta["grain"]
    return None


MODEL_FILES = _model_files()
MODEL_ENTRIES = _model_entries()


def test_the_models_are_found():
    # A guard against a glob that silently finds nothing (the test below would then pass vacuously).
    assert len(MODEL_FILES) >= 40
    assert {"runs", "facet_refs", "crm_accounts", "stg_lineage_events", "com_example_checkout_1"} <= set(MODEL_FILES)


@pytest.mark.parametrize("model", sorted(MODEL_FILES))
def test_every_model_declares_its_grain(model):
    model_file = MODEL_FILES[model].relative_to(PROJECT_DIR)
    assert model in MODEL_ENTRIES, (
        f"model {model} ({model_file}) has no entry in a models/**/_*.yml file, so no grain: "
        f"document it with a key test ({', '.join(sorted(KEY_TESTS))}) or a meta.grain reason"
    )
    yml_file, entry = MODEL_ENTRIES[model]
    key_tests = sorted(set(_tests(entry)) & KEY_TESTS)
    reason = _grain_reason(entry)
    assert key_tests or reason is not None, (
        f"model {model} ({model_file}) declares no grain in {yml_file.relative_to(PROJECT_DIR)}: add a "
        f"uniqueness test on its key ({', '.join(sorted(KEY_TESTS))}), or, for a log whose duplicates are "
        f"legitimate, a one-line reason under config: meta: grain:"
    )
    if reason is not None:
        assert isinstance(reason, str) and reason.strip() and "\n" not in reason.strip(), (
            f"model {model}: meta.grain must be a one-line reason, got {reason!r}"
        )


def test_the_key_tests_exist():
    # A renamed macro would otherwise leave models "tested" by a name that no longer means anything.
    macro_text = "\n".join(path.read_text() for path in MACROS_DIR.rglob("*.sql"))
    for name in sorted(CUSTOM_KEY_TESTS):
        assert re.search(r"{%-?\s*test\s+" + name + r"\s*\(", macro_text), f"no generic test {name} under macros/"


def test_every_documented_model_has_a_file():
    # The converse: an entry for a deleted or renamed model declares a grain for nothing.
    orphans = sorted(set(MODEL_ENTRIES) - set(MODEL_FILES))
    assert not orphans, f"documented models without a model file: {orphans}"
