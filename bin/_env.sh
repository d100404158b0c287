# Shared set-up for bin/main and bin/test: checks Java, creates .venv and installs pinned packages.
# Sourced, not executed.
set -euo pipefail

PROJECT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_DIR="${LINEAGE_VENV:-$PROJECT_DIR/.venv}"
export DBT_PROFILES_DIR="$PROJECT_DIR"
export DBT_PROJECT_DIR="$PROJECT_DIR"
export DBT_SEND_ANONYMOUS_USAGE_STATS=false
cd "$PROJECT_DIR"

require_java() {
  if ! command -v java >/dev/null 2>&1; then
    cat >&2 <<'MSG'
error: Java was not found. Spark needs Java 17 (or 21).
  Debian/Ubuntu:  sudo apt-get install -y openjdk-17-jre-headless
  macOS:          brew install openjdk@17
Then make sure `java -version` works (or set JAVA_HOME) and run this command again.
MSG
    exit 1
  fi
}

require_python() {
  PYTHON_BIN="${PYTHON:-python3.11}"
  command -v "$PYTHON_BIN" >/dev/null 2>&1 || PYTHON_BIN=python3
  if ! "$PYTHON_BIN" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)'; then
    echo "error: Python 3.11 is required ($PYTHON_BIN is $("$PYTHON_BIN" --version 2>&1)). Set PYTHON=/path/to/python3.11." >&2
    exit 1
  fi
}

# Installs only when the pins or the adapter plugin changed since the last install. The adapter is
# installed as a regular package (dbt finds plugins in the dbt.adapters namespace); python_jobs is editable.
ensure_venv() {
  require_python
  local stamp="$VENV_DIR/.lineage-install-stamp"
  local wanted
  wanted="$(cat pyproject.toml constraints.txt adapter/pyproject.toml \
    $(find adapter/dbt -type f \( -name '*.py' -o -name '*.sql' -o -name '*.yml' \) | sort) | sha256sum | cut -d' ' -f1)"
  if [ ! -x "$VENV_DIR/bin/python" ]; then
    echo "Creating virtualenv in $VENV_DIR"
    "$PYTHON_BIN" -m venv "$VENV_DIR"
  fi
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
    echo "Installing pinned packages (first run downloads about 600 MB)"
    "$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check \
      -c constraints.txt ./adapter -e ".[dev]"
    echo "$wanted" > "$stamp"
  fi
  export PATH="$VENV_DIR/bin:$PATH"
}

# Installs the Debian packages named (the ones missing; see bin/test) with one apt-get run, when we are root
# and apt-get exists; otherwise says what to install. Tests that need a package fail without it.
install_debian_packages() {
  [ "$#" -gt 0 ] || return 0
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "warning: missing $*: install them (Debian: apt-get install $*); the tests that need them will fail" >&2
    return 0
  fi
  echo "Installing $* for the tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null) \
    || echo "warning: could not install $*; the tests that need them will fail" >&2
}
