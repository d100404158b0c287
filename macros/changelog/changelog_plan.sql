{#
  Run-time bookkeeping of a changelog model: which snapshots are pending, where offsets resume,
  and the state table that spares each run from reading history. All queries here touch metadata,
  the pending partitions of the raw table, or changelog rows newer than the state (found through
  Parquet min/max statistics on `offset`), never the whole history.
#}

{% macro changelog_state_relation(changelog_relation) -%}
    {{ return(api.Relation.create(
        database=changelog_relation.database,
        schema=changelog_relation.schema,
        identifier=changelog_relation.identifier ~ '__state',
        type='table'
    )) }}
{%- endmacro %}

{#-
  {exists, seq, offset} of a state table: the snapshot and changelog offset it reflects (-1: none).
  With a hash signature, a state table whose row hashes were computed otherwise (other compared
  columns, an older encoding, or none) counts as absent: runs project the changelog instead, and the
  post-hook rebuilds the table.
-#}
{% macro changelog_read_state(state_relation, hash_signature=none) -%}
    {%- set state = {'exists': false, 'seq': -1, 'offset': -1, 'rows': 0, 'processed_seq': -1, 'processed_offset': -2} -%}
    {#- Asks the metastore, not dbt's relation cache: hooks drop and create this table behind dbt's back. -#}
    {%- set found = run_query(
        "show tables in " ~ state_relation.schema ~ " like '" ~ state_relation.identifier ~ "'") -%}
    {%- if found.rows | length > 0 -%}
        {%- set properties = {} -%}
        {%- for row in run_query('show tblproperties ' ~ state_relation) -%}
            {%- do properties.update({row[0]: row[1]}) -%}
        {%- endfor -%}
        {%- set hash_matches = hash_signature is none or properties.get('changelog.state_hash') == hash_signature -%}
        {%- if 'changelog.state_seq' in properties and 'changelog.state_offset' in properties and hash_matches -%}
            {%- do state.update({
                'exists': true,
                'seq': properties['changelog.state_seq'] | int,
                'offset': properties['changelog.state_offset'] | int,
                'rows': properties.get('changelog.state_rows', '0') | int,
                'processed_seq': properties.get('changelog.processed_seq', '-1') | int,
                'processed_offset': properties.get('changelog.processed_offset', '-2') | int
            }) -%}
        {%- endif -%}
    {%- endif -%}
    {{ return(state) }}
{%- endmacro %}

{#-
  The snapshots registered on a raw snapshot table, in order: [{seq, snapshot_time, system_time, rows}].
  Ingest registers each snapshot as a table property once its rows are written (an empty
  snapshot has no rows but is registered all the same; `rows` is none for properties without a count).
-#}
{% macro changelog_loaded_snapshots(source_relation, properties=none) -%}
    {%- set prefix = 'changelog.snapshot.' -%}
    {%- set snapshots = [] -%}
    {%- for row in (properties if properties is not none else run_query('show tblproperties ' ~ source_relation).rows) -%}
        {%- if row[0].startswith(prefix) -%}
            {%- set parts = row[1].split('|') -%}
            {%- do snapshots.append({
                'seq': row[0][prefix | length:] | int, 'snapshot_time': parts[0], 'system_time': parts[1],
                'rows': (parts[2] | int) if parts | length > 2 else none
            }) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(snapshots | sort(attribute='seq')) }}
{%- endmacro %}

{#- A column name as the source spells it; fails when the source has no such column. -#}
{% macro changelog_resolve_column(name, columns, role) -%}
    {%- set lowered = columns | map('lower') | list -%}
    {%- if name | lower not in lowered -%}
        {{ exceptions.raise_compiler_error(
            "snapshot_to_changelog: " ~ role ~ " column '" ~ name ~ "' is not a data column of the snapshots; "
            ~ "data columns: " ~ columns | join(', ')) }}
    {%- endif -%}
    {{ return(columns[lowered.index(name | lower)]) }}
{%- endmacro %}

{% macro changelog_plan(source_relation, keys, compare_columns, event_time_column, appends) -%}
    {%- set metadata = changelog_raw_metadata_columns() -%}
    {%- set columns = [] -%}
    {%- set column_types = {} -%}
    {%- for column in adapter.get_columns_in_relation(source_relation) -%}
        {%- if column.name | lower not in metadata -%}
            {%- do columns.append(column.name) -%}
            {%- do column_types.update({column.name: column.dtype}) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if columns | length == 0 -%}
        {%- if flags.WHICH in ['run', 'build', 'retry'] -%}
            {#- No input yet is not an error: the changelog waits, empty, for its first snapshot. -#}
            {%- if load_relation(this) is none or changelog_is_waiting(this) -%}
                {{ log("snapshot_to_changelog: no snapshot of " ~ source_relation ~ " is loaded yet; " ~ this
                       ~ " stays empty until `python -m python_jobs ingest snapshot` loads one", info=true) }}
                {{ return({'waiting': true, 'key_columns': keys, 'waiting_for': source_relation.identifier}) }}
            {%- endif -%}
            {{ exceptions.raise_compiler_error(
                "snapshot_to_changelog: " ~ this ~ " was built from " ~ source_relation ~ ", which no longer "
                ~ "exists or has no data columns; restore the raw snapshot table, or drop the changelog to start over") }}
        {%- endif -%}
        {#- Compiling (or linting) without data: the query's shape over the key columns and one placeholder snapshot. -#}
        {{ return(changelog_placeholder_plan(keys)) }}
    {%- endif -%}
    {%- set key_columns = [] -%}
    {%- for key in keys -%}{%- do key_columns.append(changelog_resolve_column(key, columns, 'primary key')) -%}{%- endfor -%}
    {%- set compared = [] -%}
    {%- if compare_columns is none -%}
        {%- for column in columns -%}
            {%- if column not in key_columns -%}{%- do compared.append(column) -%}{%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {%- for column in compare_columns -%}
            {%- do compared.append(changelog_resolve_column(column, columns, 'compare')) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set event_column = changelog_resolve_column(event_time_column, columns, 'event time')
        if event_time_column is not none else none -%}

    {%- set raw_properties = run_query('show tblproperties ' ~ source_relation).rows -%}
    {%- set loaded = changelog_loaded_snapshots(source_relation, raw_properties) -%}
    {%- set incremental = appends -%}
    {%- set state_relation = changelog_state_relation(this) -%}
    {#- changelog_rebuild_state: ignore the state table and project the whole changelog (the benchmark's baseline). -#}
    {%- set use_state = incremental and not var('changelog_rebuild_state', false) -%}
    {%- set no_state = {'exists': false, 'seq': -1, 'offset': -1, 'rows': 0, 'processed_seq': -1, 'processed_offset': -2} -%}
    {%- set hash_signature = changelog_hash_signature(compared) -%}
    {%- set state = changelog_read_state(state_relation, hash_signature) if use_state else no_state -%}
    {#- The first snapshot has arrived: the empty table that waited for it gives way to the real one
        (the materialization drops it; planning writes nothing). -#}
    {%- set replaces_waiting = incremental and not state.exists and changelog_is_waiting(this) -%}
    {%- if replaces_waiting -%}
        {%- set incremental = false -%}
    {%- endif -%}
    {%- set processed_seq = state.seq -%}
    {%- set next_offset = state.offset + 1 -%}
    {%- set has_tail = false -%}
    {%- if incremental -%}
        {#- The tail: changelog rows newer than the state's base partition (Parquet statistics skip older files). -#}
        {%- set tail_query -%}
            select max(`offset`) as max_offset,
                   date_format(max(system_time), 'yyyy-MM-dd HH:mm:ss.SSSSSS') as max_system_time
            from {{ this }}
            where `offset` > {{ state.offset }}
        {%- endset -%}
        {%- set tail = run_query(tail_query) -%}
        {%- set tail_max_offset = tail.columns[0].values()[0] -%}
        {%- set changelog_max_offset = (tail_max_offset | int) if tail_max_offset is not none else state.offset -%}
        {%- set has_tail = tail_max_offset is not none -%}
        {%- set next_offset = changelog_max_offset + 1 -%}
        {%- if state.processed_offset == changelog_max_offset -%}
            {#- The last run's post-hook recorded how far it got (including snapshots that changed nothing). -#}
            {%- set processed_seq = [state.processed_seq, state.seq] | max -%}
        {%- elif has_tail -%}
            {#- No trustworthy record: the snapshots whose rows the changelog holds are processed. -#}
            {%- set tail_system_time = tail.columns[1].values()[0] -%}
            {%- set absorbed = [processed_seq] -%}
            {%- for snapshot in loaded if snapshot.system_time <= tail_system_time -%}
                {%- do absorbed.append(snapshot.seq) -%}
            {%- endfor -%}
            {%- set processed_seq = absorbed | max -%}
        {%- endif -%}
    {%- endif -%}

    {%- set pending = [] -%}
    {%- for snapshot in loaded if snapshot.seq > processed_seq -%}
        {%- set expected = processed_seq + 1 + loop.index0 -%}
        {%- if snapshot.seq != expected -%}
            {{ exceptions.raise_compiler_error(
                "snapshot_to_changelog: " ~ source_relation ~ " has snapshot " ~ snapshot.seq ~ " where snapshot "
                ~ expected ~ " was expected; snapshot numbers must be consecutive") }}
        {%- endif -%}
        {%- do pending.append(snapshot) -%}
    {%- endfor -%}
    {#-
      The narrow prior state (keys and hashes) is the processed snapshot's raw partition, hashed: after a
      snapshot the state holds exactly its keys, and no change was emitted since each key's last emitted
      row, so their compared columns agree. That holds only for the hashes the state table was built with
      (a matching signature), and only while raw still holds that snapshot (an empty one has no partition).
    -#}
    {%- set prior_from_raw = [false] -%}
    {%- if state.exists and processed_seq >= 0 and pending | length > 0 -%}
        {%- for snapshot in loaded if snapshot.seq == processed_seq -%}
            {%- if snapshot.rows == 0 -%}
                {%- do prior_from_raw.append(true) -%}
            {%- else -%}
                {%- set partitions = run_query('show partitions ' ~ source_relation).columns[0].values() -%}
                {%- do prior_from_raw.append(('snapshot_seq=' ~ processed_seq) in partitions) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {#- Ingest checked every snapshot of a table that records this key; others are checked here. -#}
    {%- if pending | length > 0 and not changelog_key_enforced_by_ingest(source_relation, key_columns, raw_properties) -%}
        {%- do changelog_check_keys(source_relation, key_columns, processed_seq, pending[-1].seq) -%}
    {%- endif -%}

    {{ return({
        'columns': columns,
        'column_types': column_types,
        'key_columns': key_columns,
        'compared': compared,
        'hash_signature': hash_signature,
        'event_time_column': event_column,
        'rebuild': not incremental,
        'replaces_waiting': replaces_waiting,
        'state_relation': state_relation,
        'state': state,
        'state_exists': state.exists,
        'state_offset': state.offset,
        'has_tail': has_tail,
        'prior_from_raw': prior_from_raw[-1],
        'processed_seq': processed_seq,
        'next_offset': next_offset,
        'pending': pending,
        'through_seq': pending[-1].seq if pending | length > 0 else processed_seq
    }) }}
{%- endmacro %}

{#- True for the empty table a changelog model builds while its raw snapshot table does not exist yet. -#}
{% macro changelog_is_waiting(changelog_relation) -%}
    {%- if load_relation(changelog_relation) is none -%}{{ return(false) }}{%- endif -%}
    {%- for row in run_query('show tblproperties ' ~ changelog_relation) -%}
        {%- if row[0] == 'changelog.waiting_for' -%}{{ return(true) }}{%- endif -%}
    {%- endfor -%}
    {{ return(false) }}
{%- endmacro %}

{% macro changelog_placeholder_plan(keys) -%}
    {%- set epoch = '1970-01-01 00:00:00.000000' -%}
    {{ return({
        'columns': keys, 'column_types': {}, 'key_columns': keys, 'compared': [],
        'hash_signature': changelog_hash_signature([]), 'event_time_column': none, 'rebuild': true,
        'state_relation': none, 'state': none, 'state_exists': false, 'state_offset': -1, 'has_tail': false,
        'prior_from_raw': false, 'processed_seq': -1, 'next_offset': 0, 'through_seq': 0,
        'pending': [{'seq': 0, 'snapshot_time': epoch, 'system_time': epoch}]
    }) }}
{%- endmacro %}

{#-
  True when the raw table records this primary key (`changelog.primary_key`, set when its first
  snapshot was loaded with --primary-key): ingest then rejected every snapshot with NULL or
  duplicate keys, and checking again would cost a shuffle of every pending row.
-#}
{% macro changelog_key_enforced_by_ingest(source_relation, keys, properties=none) -%}
    {%- set recorded = [] -%}
    {%- for row in (properties if properties is not none else run_query('show tblproperties ' ~ source_relation).rows) -%}
        {%- if row[0] == 'changelog.primary_key' -%}
            {%- for part in row[1].split(',') if part.strip() -%}{%- do recorded.append(part.strip() | lower) -%}{%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(recorded | length > 0 and (recorded | sort) == (keys | map('lower') | sort | list)) }}
{%- endmacro %}

{#- Refuses pending snapshots with NULL or duplicate keys before anything is written. -#}
{% macro changelog_check_keys(source_relation, keys, processed_seq, through_seq) -%}
    {%- set key_list = changelog_column_list(keys) -%}
    {%- set null_checks = [] -%}
    {%- for key in keys -%}{%- do null_checks.append(adapter.quote(key) ~ ' is null') -%}{%- endfor -%}
    {%- set check_query -%}
        select snapshot_seq, {{ key_list }}, count(*) as copies
        from {{ source_relation }}
        where snapshot_seq > {{ processed_seq }} and snapshot_seq <= {{ through_seq }}
        group by snapshot_seq, {{ key_list }}
        having count(*) > 1 or {{ null_checks | join(' or ') }}
        order by snapshot_seq, {{ key_list }}
        limit 5
    {%- endset -%}
    {%- set problems = run_query(check_query) -%}
    {%- if problems.rows | length > 0 -%}
        {%- set examples = [] -%}
        {%- for row in problems.rows -%}
            {%- set parts = [] -%}
            {%- for key in keys -%}{%- do parts.append(key ~ '=' ~ (row[loop.index] if row[loop.index] is not none else 'NULL')) -%}{%- endfor -%}
            {%- do examples.append('snapshot ' ~ row[0] ~ ' (' ~ parts | join(', ') ~ ') x' ~ row[-1]) -%}
        {%- endfor -%}
        {{ exceptions.raise_compiler_error(
            "snapshot_to_changelog: " ~ source_relation ~ " has NULL or duplicate primary keys ("
            ~ keys | join(', ') ~ "), e.g. " ~ examples | join('; ')
            ~ ". Nothing was written. Remove the snapshot (alter table ... drop partition (snapshot_seq = N); "
            ~ "alter table ... unset tblproperties ('changelog.snapshot.<N as 9 digits>')) and load a corrected "
            ~ "file; `ingest snapshot --primary-key` rejects such files up front.") }}
    {%- endif -%}
{%- endmacro %}

{#-
  The state after folding changelog rows with offset in (after_offset, through_offset] into the
  state table's partition at state_offset (or into nothing when state_relation is none): keys the
  new rows touch take their latest row (gone if that is a retraction); other keys keep their state
  row. Columns: the data columns, event_time and cl_row_hash (`row_hash` computes it for folded
  rows; state rows have it stored), or only the keys and cl_row_hash when `narrow`. The new rows
  are few, so the state is anti-joined against a broadcast of their keys: no shuffle of the state.
  `restrict_to` names a small relation with the key columns: only those keys' rows are folded (the
  rows are filtered by a broadcast semi-join before the window, so no other row is shuffled).
-#}
{% macro changelog_fold(columns, keys, state_relation, state_offset, changelog_relation, after_offset,
                        through_offset=none, row_hash='cast(null as binary)', narrow=false, restrict_to=none) -%}
    {%- set output = keys if narrow else columns -%}
    {%- set restricted_keys = [] -%}
    {%- for key in keys -%}
        {%- do restricted_keys.append('{table}.' ~ adapter.quote(key) ~ ' = ' ~ restrict_to ~ '.' ~ adapter.quote(key)) -%}
    {%- endfor -%}
    {%- set extra = '' if narrow else 'event_time, ' -%}
    {%- set same_key = [] -%}
    {%- for key in keys -%}
        {%- do same_key.append('state_rows.' ~ adapter.quote(key) ~ ' = touched_keys.' ~ adapter.quote(key)) -%}
    {%- endfor -%}
    {%- set offsets -%}
        `offset` > {{ after_offset }}{% if through_offset is not none %} and `offset` <= {{ through_offset }}{% endif %}
    {%- endset -%}
    with latest_new_rows as (
        select {% if restrict_to is not none %}/*+ broadcast({{ restrict_to }}) */{% endif %}
            {{ changelog_column_list(columns) }},
            event_time,
            op,
            row_number() over (partition by {{ changelog_column_list(keys) }} order by `offset` desc) as cl_recency
        from {{ changelog_relation }} as changelog_rows
        {%- if restrict_to is not none %}
        left semi join {{ restrict_to }} on {{ restricted_keys | join(' and ') | replace('{table}', 'changelog_rows') }}
        {%- endif %}
        where {{ offsets }}
    )
    {%- if state_relation is not none %},

    touched_keys as (
        select distinct {{ changelog_column_list(keys) }}
        from {{ changelog_relation }}
        where {{ offsets }}
    ),

    kept_state_rows as (
        select /*+ broadcast(touched_keys{{ (', ' ~ restrict_to) if restrict_to is not none }}) */
            {{ changelog_column_list(output, 'state_rows') }},
            {{ '' if narrow else 'state_rows.event_time, ' }}state_rows.cl_row_hash
        from {{ state_relation }} as state_rows
        left anti join touched_keys on {{ same_key | join(' and ') }}
        {%- if restrict_to is not none %}
        left semi join {{ restrict_to }} on {{ restricted_keys | join(' and ') | replace('{table}', 'state_rows') }}
        {%- endif %}
        where state_rows.cl_state_offset = {{ state_offset }}
    )
    {%- endif %}

    {%- if state_relation is not none %}
    select {{ changelog_column_list(output) }}, {{ extra }}cl_row_hash
    from kept_state_rows
    union all
    {%- endif %}
    select {{ changelog_column_list(output) }}, {{ extra }}{{ row_hash }} as cl_row_hash
    from latest_new_rows
    where cl_recency = 1 and op in ({{ changelog_op('append') }}, {{ changelog_op('correct_to') }})
{% endmacro %}

{#-
  The changelog materialization's last step, given the run's plan. The state is a base partition of `<model>__state` plus the
  changelog rows written after it (the tail), which runs fold in on the fly. When the tail passes
  `changelog_compact_ratio` (default 0.2) of the base, the hook writes the folded state as a new
  partition, points the table properties at it and drops the old one; until the properties change
  readers use the previous partition, so a failure leaves a usable state. Every run records how far
  it got (`changelog.processed_seq` at `changelog.processed_offset`), so snapshots that changed
  nothing are not diffed again.
-#}
{% macro changelog_save_state(plan) -%}
    {%- if not var('changelog_rebuild_state', false) -%}
        {%- set keys = plan.key_columns -%}
        {%- if plan.get('waiting') -%}
            {%- do run_query("alter table " ~ this ~ " set tblproperties ('changelog.waiting_for' = '"
                             ~ plan.waiting_for | replace("'", "") ~ "')") -%}
            {{ return('') }}
        {%- endif -%}
        {%- set state_relation = changelog_state_relation(this) -%}
        {%- if plan.rebuild -%}
            {%- do run_query('drop table if exists ' ~ state_relation) -%}
        {%- endif -%}
        {%- set hash_signature = changelog_hash_signature(plan.compared) -%}
        {#- The plan read the state (same signature) just before the model ran: no need to ask the metastore again. -#}
        {%- set state = plan.state if not plan.rebuild and plan.state is not none
            else changelog_read_state(state_relation, hash_signature) -%}
        {#- Offsets are gapless: the tail's size follows from its last offset, and only this run's files are scanned for it. -#}
        {%- set written_from = plan.next_offset if plan.next_offset is not none else state.offset + 1 -%}
        {%- set new_max_offset = scalar_value(
            'select max(`offset`) from ' ~ this ~ ' where `offset` >= ' ~ written_from) -%}
        {%- set max_offset = (new_max_offset | int) if new_max_offset is not none else written_from - 1 -%}
        {%- set tail_rows = max_offset - state.offset -%}
        {%- set properties = {
            'changelog.processed_seq': [plan.through_seq, state.processed_seq, state.seq] | max,
            'changelog.processed_offset': max_offset,
            'changelog.state_hash': hash_signature
        } -%}
        {%- set compact_ratio = var('changelog_compact_ratio', 0.2) | float -%}
        {%- set compact = tail_rows > 0 and (not state.exists or tail_rows > compact_ratio * ([state.rows, 1] | max)) -%}
        {#- Below the ratio the run only records how far it got: no column lookup, no write of state rows. -#}
        {%- set columns = [] -%}
        {%- set column_types = {} -%}
        {%- set column_ddl = [] -%}
        {%- if compact or not state.exists -%}
            {%- for column in adapter.get_columns_in_relation(this) -%}
                {%- if column.name | lower not in changelog_system_columns() -%}
                    {%- do columns.append(column.name) -%}
                    {%- do column_types.update({column.name: column.dtype}) -%}
                    {%- do column_ddl.append(adapter.quote(column.name) ~ ' ' ~ column.dtype) -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
        {%- if not state.exists -%}
            {%- do run_query('drop table if exists ' ~ state_relation) -%}
            {%- do run_query('create table ' ~ state_relation ~ ' (' ~ column_ddl | join(', ')
                ~ ', event_time timestamp, cl_row_hash binary, cl_state_offset bigint) using ' ~ var('file_format', 'parquet')
                ~ ' partitioned by (cl_state_offset)') -%}
        {%- endif -%}
        {%- if compact -%}
            {%- set insert_sql -%}
                insert into {{ state_relation }} partition (cl_state_offset = {{ max_offset }})
                {{ changelog_fold(columns, keys, state_relation if state.exists else none, state.offset, this, state.offset,
                                  max_offset, changelog_row_hash(plan.compared, column_types)) }}
            {%- endset -%}
            {%- do run_query(insert_sql) -%}
            {%- set state_rows = scalar_value(
                'select count(*) from ' ~ state_relation ~ ' where cl_state_offset = ' ~ max_offset) -%}
            {%- do properties.update({
                'changelog.state_seq': properties['changelog.processed_seq'],
                'changelog.state_offset': max_offset,
                'changelog.state_rows': state_rows | int
            }) -%}
        {%- elif not state.exists -%}
            {%- do properties.update({'changelog.state_seq': -1, 'changelog.state_offset': -1, 'changelog.state_rows': 0}) -%}
        {%- endif -%}
        {%- set assignments = [] -%}
        {%- for key, value in properties.items() -%}
            {%- do assignments.append("'" ~ key ~ "' = '" ~ value ~ "'") -%}
        {%- endfor -%}
        {%- do run_query('alter table ' ~ state_relation ~ ' set tblproperties (' ~ assignments | join(', ') ~ ')') -%}
        {%- if compact -%}
            {%- for row in run_query('show partitions ' ~ state_relation) -%}
                {%- if row[0] != "cl_state_offset=" ~ max_offset -%}
                    {%- do run_query('alter table ' ~ state_relation ~ ' drop if exists partition (' ~ row[0] | replace('=', ' = ') ~ ')') -%}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
