{{ config(materialized='view', enabled=var('sample_inputs', false)) }}
{{ changelog_current_state(ref('crm_accounts'), ['account_id']) }}
