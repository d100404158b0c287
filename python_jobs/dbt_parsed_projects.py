"""The parsed dbt project, kept in the process between dbt commands that would parse it the same way.

Every dbt command parses the project first. A partial parse costs about 1.5 s here, and a change of ``--vars``
(another ``schema_prefix``, the sample's vars) makes dbt parse everything again: 5-10 s of Python on two cores.
A process that runs many commands (the serve loop's build rounds, the main job, the test suite) pays that each
time. dbt's programmatic API takes a parsed project (``dbtRunner(manifest=...)``) and then skips parsing, so a
project parsed once is handed to every later command with the same parse inputs.

What a parse depends on, and so the key of a kept project:
- the arguments that reach parsing: project and profiles folders, target and vars;
- the bytes of every file dbt reads to parse (``dbt_project.yml``, ``profiles.yml``, ``packages.yml`` and the
  folders named by the ``*-paths`` settings);
- the values of the environment variables those files read with ``env_var(...)``.
A changed model, macro or setting is a new key, parsed again; the kept projects are few (the most recent ones).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

# dbt's defaults for the folders it parses, where dbt_project.yml names none.
DEFAULT_RESOURCE_PATHS: dict[str, list[str] | str] = {
    "model-paths": ["models"],
    "macro-paths": ["macros"],
    "seed-paths": ["seeds"],
    "test-paths": ["tests"],
    "analysis-paths": ["analyses"],
    "snapshot-paths": ["snapshots"],
    "docs-paths": [],
    # Installed packages are parsed with the project; `dbt deps` changes them without touching its files.
    "packages-install-path": "dbt_packages",
}
# Files beside dbt_project.yml that dbt reads to parse.
PROJECT_FILES = ("dbt_project.yml", "packages.yml", "dependencies.yml", "selectors.yml")
# Commands that parse on their own terms (`parse` writes the artifacts a user asked for) or need no project.
PARSING_COMMANDS = frozenset({"parse", "deps", "clean", "debug", "init"})
KEPT_PROJECTS = 4
ENV_VAR_CALL = re.compile(rb"""env_var\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]""")


def resource_folders(project_dir: Path) -> list[Path]:
    """The folders dbt parses, from dbt_project.yml's ``*-paths`` (dbt's defaults where unset)."""
    project_file = project_dir / "dbt_project.yml"
    settings: dict[str, Any] = {}
    if project_file.is_file():
        settings = yaml.safe_load(project_file.read_text(encoding="utf-8")) or {}
    folders: list[Path] = []
    for key, default in DEFAULT_RESOURCE_PATHS.items():
        names = settings.get(key, default) or []
        for name in [names] if isinstance(names, str) else names:
            folders.append(project_dir / name)
    return folders


def _parse_input_files(project_dir: Path, profiles_dir: Path) -> Iterator[Path]:
    for name in PROJECT_FILES:
        yield project_dir / name
    yield profiles_dir / "profiles.yml"
    for folder in resource_folders(project_dir):
        if folder.is_dir():
            for root, dirs, files in os.walk(folder):
                dirs.sort()
                for name in sorted(files):
                    yield Path(root) / name


def parse_key(project_dir: Path, profiles_dir: Path, target: str, dbt_vars: dict[str, Any],
              environ: dict[str, str]) -> str:
    """A digest of everything a parse of the project depends on (see the module's docstring)."""
    digest = hashlib.sha256()
    digest.update(json.dumps([str(project_dir), str(profiles_dir), target, dbt_vars], sort_keys=True,
                             default=str).encode())
    read_env: set[str] = set()
    for path in _parse_input_files(project_dir, profiles_dir):
        if not path.is_file():
            continue
        content = path.read_bytes()
        digest.update(b"\0" + str(path).encode() + b"\0" + hashlib.sha256(content).digest())
        read_env.update(name.decode() for name in ENV_VAR_CALL.findall(content))
    for name in sorted(read_env):
        digest.update(f"\0{name}={environ.get(name)!r}".encode())
    return digest.hexdigest()


def command_name(command: Sequence[str]) -> str:
    return next((word for word in command if not word.startswith("-")), "")


class ParsedProjects:
    """The most recently parsed projects by parse key (``parse_key``), shared by the process's dbt commands."""

    def __init__(self, capacity: int = KEPT_PROJECTS) -> None:
        self._capacity = capacity
        self._kept: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        with self._lock:
            manifest = self._kept.get(key)
            if manifest is not None:
                self._kept.move_to_end(key)
            return manifest

    def put(self, key: str, manifest: Any) -> None:
        with self._lock:
            self._kept[key] = manifest
            self._kept.move_to_end(key)
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)


PARSED_PROJECTS = ParsedProjects()
