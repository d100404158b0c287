{{ snapshot_to_changelog(source('snapshots', 'crm_accounts_snapshots'), ['account_id'], event_time_column='updated_at') }}
