{#
  Canonical JSON text of a facet body: keys sorted at every level, no insignificant whitespace,
  numbers normalised. Spark's VARIANT stores object keys sorted, so a parse and print round trip
  is canonical, runs in the JVM and needs memory in proportion to one body only. Null when the
  text is not JSON or repeats a key.
#}
{% macro facet_canonical_json(text_expr) -%}
    {{ return(adapter.dispatch('facet_canonical_json', 'lineage_warehouse')(text_expr)) }}
{%- endmacro %}

{% macro default__facet_canonical_json(text_expr) -%}
    to_json(try_parse_json({{ text_expr }}))
{%- endmacro %}

{#- Content address of a canonical body. -#}
{% macro facet_body_hash(canonical_expr) -%}
    sha2({{ canonical_expr }}, 256)
{%- endmacro %}

{#-
  The partition of a body in `facet_bodies`: the first hex digit of its hash (16 shards).
  Joins on it let Spark's dynamic partition pruning read only the shards a query needs. Few shards
  on purpose: the Hive metastore lists every partition when a lookup is planned, and each load
  appends a file to every shard it touches, so 256 shards cost more in planning and small files
  than they saved in reading (measured at 100k events: planning 2.3 s vs 1.1 s).
-#}
{% macro facet_body_shard(hash_expr) -%}
    substr({{ hash_expr }}, 1, 1)
{%- endmacro %}

{#- `"<name>":<body>`, one member of a JSON object, without parsing the body again; the name is escaped as a JSON string. -#}
{% macro facet_json_member(name_expr, body_expr) -%}
    concat(substr(to_json(array({{ name_expr }})), 2, length(to_json(array({{ name_expr }}))) - 2), ':', {{ body_expr }})
{%- endmacro %}

{#- `{"<name>": <body>}` without parsing the body again. -#}
{% macro facet_json_object(name_expr, body_expr) -%}
    concat('{', {{ facet_json_member(name_expr, body_expr) }}, '}')
{%- endmacro %}

{#- Facet names to drop (var `facet_drop_list`, matched in lower case) as a boolean expression. -#}
{% macro facet_is_dropped(name_expr) -%}
    {%- set names = var('facet_drop_list', ['spark_unknown']) or [] -%}
    {%- if names is string -%}
        {%- set names = names.split(',') -%}
    {%- endif -%}
    {%- set literals = [] -%}
    {%- for name in names if name | trim -%}
        {%- do literals.append("'" ~ (name | trim | lower | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") -%}
    {%- endfor -%}
    {%- if literals -%}
        coalesce(lower({{ name_expr }}) in ({{ literals | join(', ') }}), false)
    {%- else -%}
        false
    {%- endif -%}
{%- endmacro %}
