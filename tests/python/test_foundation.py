"""Settings, profiles and the CLI: the pieces every job relies on."""

from __future__ import annotations

import pytest

from python_jobs.cli import build_parser, main
from python_jobs.settings import LAYERS, PROJECT_DIR, Settings
from python_jobs.spark import target_spark_conf


def _settings(prefix: str = "") -> Settings:
    return Settings(PROJECT_DIR, PROJECT_DIR / ".warehouse-test", "local", prefix)


def test_layers_map_to_prefixed_databases():
    settings = _settings("ci_")
    assert [settings.schema(layer) for layer in LAYERS] == [f"ci_{layer}" for layer in LAYERS]
    assert settings.table("raw", "lineage_events") == "ci_raw.lineage_events"


def test_local_target_is_embedded_quiet_and_under_lineage_home(monkeypatch, tmp_path):
    monkeypatch.setenv("LINEAGE_HOME", str(tmp_path))
    conf = target_spark_conf(_settings(), "local")
    assert conf["spark.master"].startswith("local[")
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.warehouse.dir"] == f"{tmp_path}/warehouse"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == (
        f"jdbc:derby:;databaseName={tmp_path}/metastore_db;create=true"
    )
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"


def test_cluster_target_takes_master_and_shared_warehouse_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_MASTER_URL", "spark://10.0.0.5:7077")
    monkeypatch.setenv("LINEAGE_SHARED_WAREHOUSE", "/shared/warehouse")
    conf = target_spark_conf(_settings(), "cluster")
    assert conf["spark.master"] == "spark://10.0.0.5:7077"
    assert conf["spark.sql.warehouse.dir"] == "/shared/warehouse"


def test_unknown_target_is_a_clear_error():
    with pytest.raises(KeyError, match=r"target 'nope' is not in profiles\.yml"):
        target_spark_conf(_settings(), "nope")


def test_cli_lists_every_command_group(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    for command in ("ingest", "bench", "main", "dbt", "warehouse", "cluster"):
        assert command in help_text


def test_every_command_module_registers_a_handler():
    parser = build_parser()
    assert parser.parse_args(["main", "--skip-docs"]).handler.__name__ == "run_main"
    assert parser.parse_args(["warehouse", "fingerprint"]).handler.__name__ == "run_fingerprint"


def test_name_uuid_matches_java_name_uuid_from_bytes():
    from python_jobs.keys import name_uuid

    # Java: UUID.nameUUIDFromBytes("abc".getBytes(UTF_8))
    assert name_uuid("abc") == "90015098-3cd2-3fb0-9696-3f7d28e17f72"
