{{ config(materialized='view') }}
{{ changelog_current_state(ref('crm_accounts'), ['account_id']) }}
