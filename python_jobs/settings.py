"""Where things live. Every path and name the jobs use is derived here, from environment variables.

LINEAGE_HOME           warehouse files + Derby metastore (default: <project>/.warehouse)
LINEAGE_TARGET         dbt target in profiles.yml (default: local)
LINEAGE_SCHEMA_PREFIX  prefix of every database, for isolated copies of the warehouse (default: none)
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
SAMPLES_DIR = PROJECT_DIR / "samples"

LAYERS = ("raw", "staging", "lineage", "changelog", "registry", "audit")


@dataclass(frozen=True)
class Settings:
    project_dir: Path
    lineage_home: Path
    target: str
    schema_prefix: str

    def schema(self, layer: str) -> str:
        """The Spark database of a warehouse layer, e.g. ``raw`` or ``audit``."""
        return f"{self.schema_prefix}{layer}"

    def table(self, layer: str, name: str) -> str:
        return f"{self.schema(layer)}.{name}"

    def with_prefix(self, schema_prefix: str) -> Settings:
        return Settings(self.project_dir, self.lineage_home, self.target, schema_prefix)


def load_settings() -> Settings:
    """Reads the environment and pins LINEAGE_HOME to an absolute path so dbt and Spark agree on it."""
    home = Path(os.environ.get("LINEAGE_HOME", PROJECT_DIR / ".warehouse")).resolve()
    os.environ["LINEAGE_HOME"] = str(home)
    os.environ.setdefault("LINEAGE_LOG4J", str(PROJECT_DIR / "conf" / "log4j2.properties"))
    os.environ.setdefault("DBT_PROFILES_DIR", str(PROJECT_DIR))
    # Python workers must use this interpreter (it has pyarrow and python_jobs), not whatever python3 is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return Settings(
        project_dir=PROJECT_DIR,
        lineage_home=home,
        target=os.environ.get("LINEAGE_TARGET", "local"),
        schema_prefix=os.environ.get("LINEAGE_SCHEMA_PREFIX", ""),
    )
