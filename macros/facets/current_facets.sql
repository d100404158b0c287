{#
  current_facets(scope, key_column, label_columns, condition): one row per entity of `scope` with
  its facets merged into one JSON object. Rows are taken first to last by event time, then ingest
  order, then their place in the event (inputs before outputs, `facets` before the input/output
  maps); for each facet name the last body wins whole (no deep merge). `label_columns` are carried
  from the entity's latest row.

  Every aggregate groups by the entity key first, so a filter on the key column (e.g.
  `where dataset_uuid = '...'`) is pushed by Spark below both aggregations into the `facet_refs`
  scan, where Parquet statistics on the entity-sorted files skip the other entities. The labels and
  last-seen figures ride along the per-name aggregate instead of a second pass over `facet_refs`,
  so a one-entity lookup scans the table once.

  `broadcast_latest` asks Spark to broadcast the per-name winners to the join with `facet_bodies`.
  Without it Spark sizes that side by the whole `facet_refs` table (it has no statistics for the
  key filter), plans a sort-merge join, and dynamic partition pruning (which needs a broadcast)
  does not happen: a one-entity lookup then reads every body shard. The broadcast side has one
  row per entity and facet name, smaller than the view's own result, so it is safe where the
  number of entities is bounded (datasets, jobs); not for runs, whose number grows with history.
#}
{% macro current_facets(scope, key_column, label_columns, condition='true', broadcast_latest=false) -%}
with entity_rows as (
    select
        {{ key_column }} as entity_key,
        {%- for column in label_columns %}
        {{ column }},
        {%- endfor %}
        name,
        body_hash,
        ingest_seq,
        named_struct(
            'event_time', lineage_event_time,
            'ingest_seq', ingest_seq,
            'role_order', case dataset_role when 'input' then 1 when 'output' then 2 else 0 end,
            'entry_position', entry_position,
            'section_order', case section when 'facets' then 0 else 1 end
        ) as facet_order
    from {{ ref('facet_refs') }}
    where
        scope = '{{ scope }}'
        and disposition = 'accepted'
        and {{ key_column }} is not null
        and {{ condition }}
),

latest_per_name as (
    select
        entity_key,
        name,
        max_by(body_hash, facet_order) as body_hash,
        {%- for column in label_columns %}
        max_by({{ column }}, facet_order) as {{ column }},
        {%- endfor %}
        max(facet_order) as last_order,
        max(ingest_seq) as last_ingest_seq
    from entity_rows
    group by entity_key, name
),

merged as (
    select
        {%- if broadcast_latest %} /*+ broadcast(latest_per_name) */{% endif %}
        latest_per_name.entity_key,
        {%- for column in label_columns %}
        max_by(latest_per_name.{{ column }}, latest_per_name.last_order) as {{ column }},
        {%- endfor %}
        max(latest_per_name.last_order.event_time) as last_lineage_event_time,
        max(latest_per_name.last_ingest_seq) as last_ingest_seq,
        count(*) as facet_count,
        concat(
            '{',
            array_join(
                transform(
                    array_sort(collect_list(named_struct(
                        'name', latest_per_name.name,
                        'member', {{ facet_json_object('latest_per_name.name', 'facet_bodies.body') }}
                    ))),
                    facet_member -> substr(facet_member.member, 2, length(facet_member.member) - 2)
                ),
                ','
            ),
            '}'
        ) as facets
    from latest_per_name
    inner join {{ ref('facet_bodies') }} as facet_bodies
        on
            {{ facet_body_shard('latest_per_name.body_hash') }} = facet_bodies.body_shard
            and latest_per_name.body_hash = facet_bodies.body_hash
    group by latest_per_name.entity_key
)

select
    entity_key as {{ key_column }},
    {%- for column in label_columns %}
    {{ column }},
    {%- endfor %}
    facets,
    facet_count,
    last_lineage_event_time,
    last_ingest_seq
from merged
{%- endmacro %}
