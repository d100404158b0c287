"""A scratch dbt project: this project's dbt_project.yml and macros (and the raw sources its on-run-start hooks
create tables from) plus changelog models of your own.

The benchmark (and tests) build changelog models over datasets that are not part of the warehouse;
they must not add models to the real project, so they get a project folder of their own.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from python_jobs.contracts import copy_source_contracts
from python_jobs.settings import PROJECT_DIR


@dataclass(frozen=True)
class ChangelogModel:
    name: str
    dataset: str
    primary_key: Sequence[str]
    compare_columns: Sequence[str] | None = None
    event_time_column: str | None = None
    data_tests: Sequence[dict] = field(default_factory=tuple)

    def sql(self) -> str:
        args = [f"source('snapshots', '{self.dataset}_snapshots')", json.dumps(list(self.primary_key))]
        if self.compare_columns is not None:
            args.append(f"compare_columns={json.dumps(list(self.compare_columns))}")
        if self.event_time_column is not None:
            args.append(f"event_time_column='{self.event_time_column}'")
        return "{{ snapshot_to_changelog(" + ", ".join(args) + ") }}\n"


def write_scratch_project(root: Path, models: Sequence[ChangelogModel]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(PROJECT_DIR / "dbt_project.yml", root / "dbt_project.yml")
    shutil.rmtree(root / "macros", ignore_errors=True)
    shutil.copytree(PROJECT_DIR / "macros", root / "macros")
    copy_source_contracts(root)
    model_dir = root / "models" / "changelog"
    shutil.rmtree(model_dir, ignore_errors=True)
    model_dir.mkdir(parents=True)
    for model in models:
        (model_dir / f"{model.name}.sql").write_text(model.sql())
    datasets = sorted({model.dataset for model in models})
    document = {
        "version": 2,
        "sources": [
            {
                "name": "snapshots",
                "schema": "{{ var('schema_prefix', '') }}raw",
                "tables": [{"name": f"{dataset}_snapshots"} for dataset in datasets],
            }
        ],
        "models": [{"name": model.name, "data_tests": list(model.data_tests)} for model in models],
    }
    # JSON is valid YAML, so no YAML writer is needed.
    (model_dir / "_models.yml").write_text(json.dumps(document, indent=2))
    return root
