"""The import rules of docs/ARCHITECTURE.md, read from the source with ``ast`` (nothing is imported, no Spark).

Layers of ``python_jobs``: the CLI (``cli.py``, ``__main__.py``, ``commands/``), the tools (``tools/``) and
the product (everything else). The product imports neither the tools nor the CLI; the tools may run the CLI
through ``python_jobs.cli`` but import no command module; the CLI may import anything. The adapter plugin
imports only the standard library, itself and what ``adapter/pyproject.toml`` declares.
"""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tokenize
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from python_jobs.settings import PROJECT_DIR

PACKAGE_DIR = PROJECT_DIR / "python_jobs"
ADAPTER_DIR = PROJECT_DIR / "adapter"
ADAPTER_SOURCES = ADAPTER_DIR / "dbt"
ADAPTER_OWN = ("dbt.adapters.spark_python", "dbt.include.spark_python")
ARCHITECTURE = PROJECT_DIR / "docs" / "ARCHITECTURE.md"
# Importing these takes a second or more between them: the CLI imports them when a command runs, never to
# build its parser (cli.py imports every command module on every start).
HEAVY_MODULES = ("dbt.cli.main", "pyarrow.compute", "openlineage.client", "python_jobs.warehouse.main_job")


@dataclass(frozen=True)
class Edge:
    source: str  # the importing module
    target: str  # the imported module, resolved to the deepest module or package that exists
    line: int
    in_function: bool

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    return {
        module_name(path, package_dir.parent): path
        for path in sorted(package_dir.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _resolve(name: str, known: set[str]) -> str:
    """The deepest prefix of ``name`` that is a module of ``known`` (``name`` itself when none is)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return name


@cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def imports_of(module: str, path: Path, known: set[str]) -> Iterator[Edge]:
    """Every import of the module, at its top, inside functions or under ``TYPE_CHECKING`` alike."""
    tree = parsed(path)
    is_package = path.name == "__init__.py"
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside = {id(inner) for function in functions for inner in ast.walk(function) if inner is not function}
    for node in ast.walk(tree):
        in_function = id(node) in inside
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(module, _resolve(alias.name, known), node.lineno, in_function)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            for alias in node.names:
                yield Edge(module, _resolve(f"{prefix}.{alias.name}", known), node.lineno, in_function)


@cache
def package_edges() -> tuple[Edge, ...]:
    modules = package_modules()
    known = set(modules)
    return tuple(edge for module, path in modules.items() for edge in imports_of(module, path, known))


def layer(module: str) -> str:
    if module in ("python_jobs.cli", "python_jobs.__main__") or module.startswith("python_jobs.commands"):
        return "cli"
    if module == "python_jobs.tools" or module.startswith("python_jobs.tools."):
        return "tools"
    return "product"


def is_internal(module: str) -> bool:
    return module == "python_jobs" or module.startswith("python_jobs.")


def violations(edges: tuple[Edge, ...]) -> list[str]:
    """The edges that break the layering."""
    found = []
    for edge in edges:
        if not is_internal(edge.target):
            continue
        source, target = layer(edge.source), layer(edge.target)
        if source == "product" and target != "product":
            found.append(f"{edge}: the product imports the {target} layer")
        elif source == "tools" and target == "cli" and edge.target != "python_jobs.cli":
            found.append(f"{edge}: a tool imports a command module (run commands through python_jobs.cli)")
    return found


# ------------------------------------------------------------------------------------------- the layers


def test_the_product_never_imports_tools_or_the_cli_and_tools_no_command():
    assert violations(package_edges()) == []


def test_a_violation_is_caught():
    """The check itself: the product importing a tool, a command or the CLI, and a tool importing a command."""
    edges = (
        Edge("python_jobs.serve.app", "python_jobs.tools.bench.harness", 1, False),
        Edge("python_jobs.warehouse.main_job", "python_jobs.commands.main", 2, True),
        Edge("python_jobs.landing", "python_jobs.cli", 3, False),
        Edge("python_jobs.tools.faults.child", "python_jobs.commands.warehouse", 4, False),
        Edge("python_jobs.tools.faults.child", "python_jobs.cli", 5, False),  # allowed
        Edge("python_jobs.commands.main", "python_jobs.tools.generate.sample", 6, False),  # allowed
    )
    assert [line.split(":")[1].split()[0] for line in violations(edges)] == ["1", "2", "3", "4"]


def test_relative_and_package_imports_resolve_to_modules(tmp_path):
    package = tmp_path / "python_jobs"
    (package / "tools").mkdir(parents=True)
    for name in ("__init__.py", "tools/__init__.py", "tools/harness.py", "landing.py"):
        (package / name).write_text("")
    (package / "landing.py").write_text("from .tools import harness\nfrom python_jobs import tools\n")
    modules = package_modules(package)
    edges = list(imports_of("python_jobs.landing", package / "landing.py", set(modules)))
    assert [edge.target for edge in edges] == ["python_jobs.tools.harness", "python_jobs.tools"]
    assert len(violations(tuple(edges))) == 2


def test_every_package_and_top_level_module_is_in_the_architecture_document():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    names = {path.stem if path.is_file() else path.name for path in PACKAGE_DIR.iterdir()
             if (path.suffix == ".py" and not path.name.startswith("__")) or (path / "__init__.py").is_file()}
    names |= {path.name for path in (PACKAGE_DIR / "tools").iterdir() if (path / "__init__.py").is_file()}
    missing = sorted(name for name in names if f"`{name}" not in text and f"{name}/" not in text)
    assert not missing, f"docs/ARCHITECTURE.md does not say what these are for: {missing}"


# ------------------------------------------------------------------------------ imports inside functions


LINT_DIRECTIVE = re.compile(r"#\s*(noqa\b[:\w, ]*|type:\s*ignore\S*)")


def comment_lines(path: Path) -> set[int]:
    """Lines with a comment that says something (a bare ``# noqa: ...`` or ``# type: ignore`` does not)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return {
        token.start[0] for token in tokens
        if token.type == tokenize.COMMENT and LINT_DIRECTIVE.sub("", token.string).strip("# ")
    }


def import_lines(path: Path) -> set[int]:
    """The lines that import statements span."""
    tree = parsed(path)
    return {line for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)}


def unexplained_function_imports(paths: dict[str, Path], known: set[str]) -> list[str]:
    """Imports inside functions without a comment on their line or right above their group of imports."""
    found = []
    for module, path in paths.items():
        comments, imports = comment_lines(path), import_lines(path)
        for edge in imports_of(module, path, known):
            above = edge.line - 1
            while above in imports and above not in comments:
                above -= 1
            if edge.in_function and not {edge.line, above} & comments:
                found.append(str(edge))
    return sorted(set(found))


def test_an_import_inside_a_function_says_why():
    """An import at the top of a module shows the edge; one inside a function (a heavy import on a CLI
    path, an optional package) carries a comment on its line or the line above."""
    modules = package_modules()
    adapter = {module_name(p, ADAPTER_DIR): p for p in sorted(ADAPTER_SOURCES.rglob("*.py"))}
    assert unexplained_function_imports({**modules, **adapter}, set(modules)) == []


# ------------------------------------------------------------------------------------------ the adapter


def adapter_requirements() -> list[Requirement]:
    project = tomllib.loads((ADAPTER_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(text) for text in project["dependencies"]]


def declared_distributions() -> set[str]:
    """What the adapter declares, and what those declare in turn (with the extras it asks for)."""
    names = set()
    for requirement in adapter_requirements():
        names.add(canonicalize_name(requirement.name))
        for text in metadata.requires(requirement.name) or []:
            needed = Requirement(text)
            environments = [{"extra": extra} for extra in ("", *requirement.extras)]
            if needed.marker is None or any(needed.marker.evaluate(env) for env in environments):
                names.add(canonicalize_name(needed.name))
    return names


@cache
def owners() -> dict[str, list[str]]:
    """Top-level module to the installed distributions that provide it."""
    return metadata.packages_distributions()


@cache
def distribution_files(name: str) -> frozenset[str]:
    return frozenset(str(file) for file in metadata.distribution(name).files or [])


@cache
def distribution_of(module: str) -> str | None:
    """The installed distribution whose files hold ``module`` (or its nearest parent): namespace packages
    such as ``dbt`` are shared by several."""
    parts = module.split(".")
    candidates = owners().get(parts[0], [])
    for end in range(len(parts), 0, -1):
        stem = "/".join(parts[:end])
        for name in candidates:
            files = distribution_files(name)
            if f"{stem}.py" in files or f"{stem}/__init__.py" in files:
                return canonicalize_name(name)
    return None


def undeclared_adapter_imports() -> list[str]:
    declared = declared_distributions()
    found = []
    for path in sorted(ADAPTER_SOURCES.rglob("*.py")):
        module = module_name(path, ADAPTER_DIR)
        for edge in imports_of(module, path, set()):
            target = edge.target
            top = target.split(".")[0]
            if top in sys.stdlib_module_names or target.startswith(ADAPTER_OWN) or top == "__future__":
                continue
            if is_internal(target) or distribution_of(target) not in declared:
                found.append(f"{edge} (from {distribution_of(target) or 'no installed distribution'})")
    return found


def test_the_adapter_imports_only_what_it_declares():
    assert "lineage-warehouse" not in declared_distributions()
    assert undeclared_adapter_imports() == []


def test_the_project_hands_the_adapter_its_writer_lock_through_the_documented_hook():
    project = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    hooks = project["entry-points"]["dbt_spark_python.before_write"]
    module, _, function = hooks["writer_lock"].partition(":")
    assert module in package_modules() and layer(module) == "product"
    assert f"def {function}(" in package_modules()[module].read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------- the CLI start

CLI_START = """
import importlib.abc, json, sys
blocked = set(json.loads(sys.argv[1]))
class DevExtras(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ImportError(f"{name} is a dev extra")
        return None
sys.meta_path.insert(0, DevExtras())
from python_jobs.cli import build_parser
build_parser()
print(json.dumps(sorted(sys.modules)))
"""


def dev_only_modules() -> list[str]:
    """Top-level modules of the dev extras that the runtime dependencies do not install too."""
    project = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = {canonicalize_name(Requirement(text).name) for text in project["optional-dependencies"]["dev"]}
    runtime = {canonicalize_name(Requirement(text).name) for text in project["dependencies"]}
    return sorted(
        top for top, dists in owners().items()
        if {canonicalize_name(d) for d in dists} & dev and not {canonicalize_name(d) for d in dists} & runtime
        and top.isidentifier()
    )


def test_the_cli_starts_without_the_dev_extras_and_without_heavy_imports():
    blocked = dev_only_modules()
    assert {"httpx", "duckdb", "matplotlib"} <= set(blocked)
    done = subprocess.run([sys.executable, "-c", CLI_START, json.dumps(blocked)], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert sorted(loaded & set(HEAVY_MODULES)) == []
