"""Run dbt commands inside this Python process (and so inside its SparkSession)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from python_jobs.dbt_parsed_projects import PARSED_PROJECTS, PARSING_COMMANDS, command_name, parse_key
from python_jobs.errors import UserFacingError
from python_jobs.settings import PROJECT_DIR, Settings


class DbtCommandError(RuntimeError):
    """A dbt command failed; the message lists the failing nodes."""


@dataclass(frozen=True)
class DbtOutcome:
    success: bool
    result: Any
    failures: list[str]


def target_dir(settings: Settings) -> Path:
    """dbt's target folder (its artifacts): ``$DBT_TARGET_PATH`` or ``target/`` of the project."""
    return Path(os.environ.get("DBT_TARGET_PATH", settings.project_dir / "target"))


def dbt_vars(settings: Settings, extra_vars: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"schema_prefix": settings.schema_prefix, **(extra_vars or {})}


def dbt_args(
    settings: Settings, command: Sequence[str], extra_vars: dict[str, Any] | None = None
) -> list[str]:
    return [
        *command,
        "--project-dir",
        str(settings.project_dir),
        "--profiles-dir",
        str(PROJECT_DIR),
        "--target",
        settings.target,
        "--vars",
        json.dumps(dbt_vars(settings, extra_vars)),
    ]


def _failures(result: Any) -> list[str]:
    failures: list[str] = []
    for node_result in getattr(result, "results", None) or []:
        status = str(getattr(node_result, "status", "")).lower()
        if status in {"error", "fail", "runtimestatus.error", "teststatus.fail"} or status.endswith(
            (".error", ".fail")
        ):
            node = getattr(node_result, "node", None)
            name = getattr(node, "unique_id", "?")
            failures.append(f"{name}: {getattr(node_result, 'message', '')}")
    return failures


def run_dbt(
    settings: Settings,
    command: Sequence[str],
    extra_vars: dict[str, Any] | None = None,
    check: bool = True,
    callbacks: Sequence[Callable[[Any], None]] = (),
) -> DbtOutcome:
    """``callbacks`` receive every dbt event (``EventMsg``), e.g. to count finished nodes. The project is parsed
    once per parse inputs and kept for the process's later commands (``dbt_parsed_projects``)."""
    from dbt.cli.main import dbtRunner  # about 4 s to import: only when a dbt command runs, not on every CLI start

    key = parse_key(settings.project_dir, PROJECT_DIR, settings.target, dbt_vars(settings, extra_vars), os.environ)
    name = command_name(command)
    manifest = None if name in PARSING_COMMANDS else parsed_project(settings, extra_vars, key)
    res = dbtRunner(manifest=manifest, callbacks=list(callbacks)).invoke(dbt_args(settings, command, extra_vars))
    if name == "parse" and res.success:
        PARSED_PROJECTS.put(key, res.result)
    outcome = DbtOutcome(success=bool(res.success), result=res.result, failures=_failures(res.result))
    if check and not outcome.success:
        detail = "\n".join(outcome.failures) or str(res.exception or "see the dbt log above")
        raise DbtCommandError(f"dbt {' '.join(command)} failed:\n{detail}")
    return outcome


def parsed_project(settings: Settings, extra_vars: dict[str, Any] | None, key: str) -> Any | None:
    """The kept parsed project for ``key``, or a new parse of it; None when the parse fails (the command then
    parses on its own and reports the project's error as usual)."""
    from dbt.cli.main import dbtRunner  # as in run_dbt: imported when a dbt command runs

    manifest = PARSED_PROJECTS.get(key)
    if manifest is None:
        parsed = dbtRunner().invoke(dbt_args(settings, ["parse"], extra_vars))
        if not parsed.success:
            return None
        manifest = parsed.result
        PARSED_PROJECTS.put(key, manifest)
    return manifest


def project_name(project_dir: Path) -> str | None:
    """The ``name`` in a dbt project's ``dbt_project.yml`` (None without one)."""
    path = project_dir / "dbt_project.yml"
    if not path.is_file():
        return None
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return document.get("name") if isinstance(document, dict) else None


def load_manifest(settings: Settings) -> dict[str, Any]:
    """dbt's ``manifest.json`` of the settings' project, as the last dbt command on it wrote it (every command
    does, ``parse`` too). Several projects may share one target folder (``$DBT_TARGET_PATH``): when the manifest
    there is another project's, this project is parsed again, which writes its own."""
    path = target_dir(settings) / "manifest.json"
    if not path.is_file():
        raise UserFacingError(
            f"dbt's manifest {path} is missing: it lists the project's models. Run any dbt command first, "
            "e.g. `python -m python_jobs dbt parse`."
        )
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("metadata", {}).get("project_name") != project_name(settings.project_dir):
        run_dbt(settings, ["parse"])
        manifest = json.loads(path.read_text(encoding="utf-8"))
    return manifest
