{#- The sample's dataset: built only with the var sample_inputs (the main job, the tests). -#}
{{ config(enabled=var('sample_inputs', false)) }}
{{ snapshot_to_changelog(source('snapshots', 'crm_accounts_snapshots'), ['account_id'], event_time_column='updated_at') }}
