{#
  Deterministic keys. Every model calls these macros, so a key means the same thing everywhere.

  name_uuid(expr): a name-based MD5 UUID (RFC 4122 version 3), byte for byte what Java's
  UUID.nameUUIDFromBytes returns for the UTF-8 bytes of `expr`. Marquez builds schema version
  ids this way, so ours match theirs.
#}
{% macro name_uuid(expr) -%}
    {{ return(adapter.dispatch('name_uuid', 'lineage_warehouse')(expr)) }}
{%- endmacro %}

{% macro default__name_uuid(expr) -%}
    {#- md5 hex; set the version nibble (13th hex digit) to 3 and the variant bits (17th) to 10xx.
        The lambda binds the digest once: the key expression is evaluated (and compiled) once. -#}
    element_at(transform(array(md5({{ expr }})), h -> concat_ws('-',
        substr(h, 1, 8),
        substr(h, 9, 4),
        concat('3', substr(h, 14, 3)),
        concat(lower(hex((cast(conv(substr(h, 17, 1), 16, 10) as int) & 3) | 8)), substr(h, 18, 3)),
        substr(h, 21, 12)
    )), 1)
{%- endmacro %}

{#- Natural keys: the string each entity's uuid is derived from. -#}
{% macro namespace_uuid(namespace_expr) -%}
    {{ name_uuid("concat('namespace:', " ~ namespace_expr ~ ")") }}
{%- endmacro %}

{% macro dataset_uuid(namespace_expr, name_expr) -%}
    {{ name_uuid("concat('dataset:', " ~ namespace_expr ~ ", ':', " ~ name_expr ~ ")") }}
{%- endmacro %}

{% macro job_uuid(namespace_expr, name_expr) -%}
    {{ name_uuid("concat('job:', " ~ namespace_expr ~ ", ':', " ~ name_expr ~ ")") }}
{%- endmacro %}

{#- One version per dataset per run that wrote it: START and COMPLETE of a run collapse into it. -#}
{% macro dataset_version_uuid(namespace_expr, name_expr, run_id_expr) -%}
    {{ name_uuid("concat('dataset_version:', " ~ namespace_expr ~ ", ':', " ~ name_expr ~ ", ':', " ~ run_id_expr ~ ")") }}
{%- endmacro %}

{#- A field of a dataset, keyed like Marquez's dataset_fields: (dataset, name, type). -#}
{% macro dataset_field_uuid(namespace_expr, name_expr, field_name_expr, field_type_expr) -%}
    {{ name_uuid("concat_ws(':', 'dataset_field', " ~ namespace_expr ~ ", " ~ name_expr ~ ", "
        ~ field_name_expr ~ ", " ~ field_type_expr ~ ")") }}
{%- endmacro %}
