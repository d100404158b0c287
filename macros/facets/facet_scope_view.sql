{#
  facet_scope_view(scope, columns): Marquez's <scope>_facets shape over the deduplicated storage. The
  accepted `facet_refs` rows of one scope through the facet commit mark, keyed `<scope>_facet_key`,
  with `columns` (facet_refs columns, in output order; they include name, body_hash and ingest_seq)
  and, after `name`, `facet`: the JSON text `{"<name>": <body>}`, its body joined back from
  `facet_bodies` by shard (so Spark prunes the shards) and hash.
#}
{% macro facet_scope_view(scope, columns) -%}
with scope_rows as (
    select
        facet_row_key,
        {%- for column in columns %}
        {{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ ref('facet_refs') }}
    where
        ingest_seq <= {{ facet_published_through() }}
        and scope = '{{ scope }}' and disposition = 'accepted'
),

bodies as (
    select
        body_shard,
        body_hash,
        body
    from {{ ref('facet_bodies') }}
)

{%- set outputs = [] -%}
{%- for column in columns -%}
    {%- do outputs.append('scope_rows.' ~ column) -%}
    {%- if column == 'name' -%}
        {%- do outputs.append(facet_json_object('scope_rows.name', 'bodies.body') ~ ' as facet') -%}
    {%- endif -%}
{%- endfor %}

select
    scope_rows.facet_row_key as {{ scope }}_facet_key,
    {{ outputs | join(',\n    ') }}
from scope_rows
inner join bodies
    on
        {{ facet_body_shard('scope_rows.body_hash') }} = bodies.body_shard
        and scope_rows.body_hash = bodies.body_hash
{%- endmacro %}
