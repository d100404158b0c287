{{ config(materialized='view') }}

{#- The live schema pointers of every dataset version; `is_current` marks the one it points at now. -#}
with live_pointers as (
    {{ lineage_live_revisions(ref('int_lineage_version_schema_revisions'), 'pointer_timeline_key',
        lineage_schema_pointer_columns() + ['build_seq']) | indent(4) }}
)

select
    {%- for column in lineage_schema_pointer_columns() %}
        {{ column }},
    {%- endfor %}
    row_number() over (
        partition by dataset_version_uuid order by pointer_timeline_key desc
    ) = 1 as is_current,
    build_seq
from live_pointers
