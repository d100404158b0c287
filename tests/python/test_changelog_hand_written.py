"""The hand-written CRM exports in samples/changelog, whose op-by-op expectations are two singular dbt
tests (tests/data_tests/changelog_crm_accounts_*). The main job loads generated exports instead, so
those tests run here, enabled by the var ``hand_written_crm_sample`` (with ``sample_inputs``, which enables the
sample's ``crm_accounts`` models)."""

from __future__ import annotations

from python_jobs.commands.changelog import load_samples
from python_jobs.dbt import run_dbt
from python_jobs.warehouse.main_job import SAMPLE_DBT_VARS

EXPECTATIONS = {"changelog_crm_accounts_expected_ops", "changelog_crm_accounts_reappearing_account"}


def test_hand_written_crm_exports_give_the_expected_changelog(spark, isolated_settings):
    load_samples(spark, isolated_settings)
    outcome = run_dbt(
        isolated_settings,
        ["build", "--select", "crm_accounts", "crm_accounts_current"],
        extra_vars={**SAMPLE_DBT_VARS, "hand_written_crm_sample": True},
    )
    ran = {result.node.name: str(result.status) for result in outcome.result.results}
    assert set(ran) >= EXPECTATIONS, sorted(ran)
    assert {ran[name] for name in EXPECTATIONS} == {"pass"}
