{#
  facet_winner_revisions(scope, key_column, label_columns, condition, inline_bodies): the body of an
  append-only model holding, for each load, the best `facet_refs` row of every (entity, facet name)
  the load touched. The `current_*_facets` views take the best revision per (entity, name), which is
  the best row overall: the order (`facet_order`) is a total order on rows and every row is seen by
  exactly one load. A load reads only the `facet_refs` rows after its watermark, and never compares
  with earlier revisions (a late event with an older time is appended and simply loses in the view),
  so its cost follows the new rows.

  The table is bucketed by the entity key (`facet_winner_buckets`): a lookup filtered on the key
  reads one bucket, and the view's aggregates, grouped by the key first, need no shuffle. With
  `inline_bodies` each revision carries its body as JSON member text (`"name":body`), taken from
  the new events themselves (not from `facet_bodies`, whose size follows the whole history), so a
  lookup joins nothing; for scopes whose number of entities grows with history (runs) the bodies
  stay in `facet_bodies` only and the view joins them by hash.
#}
{% macro facet_winner_buckets() -%}
    {{ return(4) }}
{%- endmacro %}

{#- The config of a facet_winners_* model: windowed over facet_refs, bucketed by its entity key. -#}
{% macro facet_winner_config(entity_key) -%}
    {{ config(
        materialized='windowed_append',
        input_window=facet_refs_input('last_ingest_seq'),
        clustered_by=[entity_key],
        buckets=facet_winner_buckets(),
    ) }}
{%- endmacro %}

{#- Where a facet row stands in the merge: event time, ingest order, then its place in the event. -#}
{% macro facet_order(relation='') -%}
    {%- set p = relation ~ '.' if relation else '' -%}
    named_struct(
        'event_time', {{ p }}lineage_event_time,
        'ingest_seq', {{ p }}ingest_seq,
        'role_order', case {{ p }}dataset_role when 'input' then 1 when 'output' then 2 else 0 end,
        'entry_position', {{ p }}entry_position,
        'section_order', case {{ p }}section when 'facets' then 0 else 1 end
    )
{%- endmacro %}

{% macro facet_winner_revisions(scope, key_column, label_columns, condition='true', inline_bodies=false) -%}
{%- set window_condition = "scope = '" ~ scope ~ "' and disposition = 'accepted' and " ~ key_column ~ " is not null and (" ~ condition ~ ") and " ~ in_input_window() -%}

with window_rows as (
    select
        {{ key_column }} as entity_key,
        {%- for column in label_columns %}
        {{ column }},
        {%- endfor %}
        name,
        body_hash,
        facet_row_key,
        ingest_seq,
        {{ facet_order() | indent(8) }} as facet_order
    from {{ ref('facet_refs') }}
    where {{ window_condition }}
),

load_winners as (
    select
        entity_key,
        name,
        max_by(
            named_struct(
                {%- for column in label_columns %}
                '{{ column }}', {{ column }},
                {%- endfor %}
                'facet_row_key', facet_row_key,
                'body_hash', body_hash
            ),
            facet_order
        ) as winner,
        max(facet_order) as facet_order,
        max(ingest_seq) as last_ingest_seq
    from window_rows
    group by entity_key, name
){%- if inline_bodies %},

{{ facet_entry_ctes(ref('stg_lineage_events'), facet_window_source_events()) }},

winner_texts as (
    select
        facet_row_key,
        body_text
    from facet_entries
    where scope = '{{ scope }}'
)
{%- endif %}

{#- one task per bucket, so that a load writes one file per bucket #}
select /*+ repartition({{ facet_winner_buckets() }}, {{ key_column }}) */
    load_winners.entity_key as {{ key_column }},
    load_winners.name,
    {%- for column in label_columns %}
    load_winners.winner.{{ column }},
    {%- endfor %}
    load_winners.winner.body_hash,
    {%- if inline_bodies %}
    {{ facet_json_member('load_winners.name', facet_canonical_json('winner_texts.body_text')) }} as member,
    {%- endif %}
    load_winners.facet_order,
    load_winners.last_ingest_seq,
    load_winners.winner.facet_row_key as winner_row_key
from load_winners
{%- if inline_bodies %}
inner join winner_texts
    on load_winners.winner.facet_row_key = winner_texts.facet_row_key
{%- endif %}
{%- endmacro %}
