{#
  current_facets(winners, key_column, label_columns, inline_bodies): one row per entity with its
  facets merged into one JSON object, read from a `facet_winners_*` revision table. Rows are taken
  first to last by event time, then ingest order, then their place in the event (inputs before
  outputs, `facets` before the input/output maps); for each facet name the last body wins whole (no
  deep merge). `label_columns` are carried from the entity's latest row.

  Both aggregates group by the entity key first, so a filter on the key column (e.g.
  `where dataset_uuid = '...'`) is pushed into the scan of the revision table, which is bucketed by
  that key: one bucket is read, and the aggregates run without a shuffle. With `inline_bodies` the
  revisions carry the body text and nothing is joined; otherwise the winners' bodies are joined
  from `facet_bodies` by hash (and shard, so that a broadcast of the winners prunes the shards).
#}
{% macro current_facets(winners, key_column, label_columns, inline_bodies=false) -%}
with latest_per_name as (
    select
        {{ key_column }} as entity_key,
        name,
        {%- if inline_bodies %}
        max_by(member, facet_order) as member,
        {%- else %}
        max_by(body_hash, facet_order) as body_hash,
        {%- endif %}
        {%- for column in label_columns %}
        max_by({{ column }}, facet_order) as {{ column }},
        {%- endfor %}
        max(facet_order) as last_order,
        max(last_ingest_seq) as last_ingest_seq
    from {{ winners }}
    where last_ingest_seq <= {{ facet_published_through() }}
    group by {{ key_column }}, name
),

{%- if not inline_bodies %}

latest_members as (
    select
        latest_per_name.entity_key,
        latest_per_name.name,
        {{ facet_json_member('latest_per_name.name', 'facet_bodies.body') }} as member,
        {%- for column in label_columns %}
        latest_per_name.{{ column }},
        {%- endfor %}
        latest_per_name.last_order,
        latest_per_name.last_ingest_seq
    from latest_per_name
    inner join {{ ref('facet_bodies') }} as facet_bodies
        on
            {{ facet_body_shard('latest_per_name.body_hash') }} = facet_bodies.body_shard
            and latest_per_name.body_hash = facet_bodies.body_hash
),
{%- endif %}

merged as (
    select
        entity_key,
        {%- for column in label_columns %}
        max_by({{ column }}, last_order) as {{ column }},
        {%- endfor %}
        max(last_order.event_time) as last_lineage_event_time,
        max(last_ingest_seq) as last_ingest_seq,
        count(*) as facet_count,
        concat(
            '{',
            array_join(
                transform(
                    array_sort(collect_list(named_struct('name', name, 'member', member))),
                    facet_member -> facet_member.member
                ),
                ','
            ),
            '}'
        ) as facets
    from {{ 'latest_per_name' if inline_bodies else 'latest_members' }}
    group by entity_key
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
