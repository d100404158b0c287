"""`dbt docs generate --static` renders in a real headless Chromium, lineage graph included."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from browser import CHROMIUM_FLAGS, chromium_binary  # tests/python is on sys.path


def _render(
    static_page: Path, profile_dir: Path, fragment: str, extra: list[str]
) -> subprocess.CompletedProcess:
    command = [
        chromium_binary(),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile_dir}",
        "--virtual-time-budget=15000",
        "--window-size=1400,1000",
        *extra,
        f"file://{static_page}{fragment}",
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def static_page(sample_warehouse) -> Path:
    page = Path(os.environ["DBT_TARGET_PATH"]) / "static_index.html"
    assert page.is_file(), f"dbt docs generate --static did not write {page}"
    return page


def test_docs_page_lists_the_models(static_page, tmp_path):
    result = _render(static_page, tmp_path / "profile", "#!/overview", ["--dump-dom"])
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert "lineage_warehouse" in dom
    assert "stg_lineage_events" in dom  # the project tree in the sidebar is rendered from the manifest


def test_docs_model_page_shows_its_lineage(static_page, tmp_path):
    fragment = "#!/model/model.lineage_warehouse.stg_lineage_events"
    dom = _render(static_page, tmp_path / "profile-model", fragment, ["--dump-dom"]).stdout
    assert "Depends On" in dom and "Referenced By" in dom
    assert "event_time_has_offset" in dom  # documented columns are rendered


def test_docs_lineage_graph_renders(static_page, tmp_path):
    # g_v=1 opens the full-screen lineage graph of the model (dbt docs' graph view).
    fragment = "#!/model/model.lineage_warehouse.dataset_schema_events?g_v=1"
    dom = _render(static_page, tmp_path / "profile-dom", fragment, ["--dump-dom"]).stdout
    assert "Lineage Graph" in dom
    screenshot = tmp_path / "model.png"
    shot = _render(static_page, tmp_path / "profile-shot", fragment, [f"--screenshot={screenshot}"])
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.is_file() and screenshot.stat().st_size > 20_000  # a rendered page, not a blank one
