{#
  Schema versions, computed exactly like Marquez's Utils.newDatasetSchemaVersionFor:
  name_uuid('<namespace>:<dataset name>:<token>:<token>...') where each (name, type) pair gives
  the token `name:type`, or `name` when the type is null; pairs are de-duplicated and sorted by
  (name, type) with a null type first, strings compared by UTF-16 code units like Java's
  String.compareTo (hence the sort on UTF-16BE bytes, not on Spark's UTF-8 order).
#}

{#- array<struct<name, type>> → the ':'-joined token text (no namespace/name prefix). -#}
{% macro schema_token_text(fields_expr) -%}
    array_join(
        transform(
            array_sort(array_distinct(transform(
                filter({{ fields_expr }}, f -> f.name is not null),
                f -> named_struct(
                    'name_key', encode(f.name, 'UTF-16BE'),
                    'type_key', encode(f.type, 'UTF-16BE'),
                    'name', f.name,
                    'type', f.type
                )
            ))),
            t -> if(t.type is null, t.name, concat(t.name, ':', t.type))
        ),
        ':'
    )
{%- endmacro %}

{#- The Marquez schema version id of a dataset's field set. -#}
{% macro schema_version_uuid(namespace_expr, name_expr, fields_expr) -%}
    {{ name_uuid("concat(" ~ namespace_expr ~ ", ':', " ~ name_expr ~ ", ':', " ~ schema_token_text(fields_expr) ~ ")") }}
{%- endmacro %}

{#
  The fields of a `schema` dataset facet (JSON text), flattened to array<struct<name, type,
  description>>. Top-level fields keep their name; nested (struct) fields become one more field
  each, named by the dot-joined path (`address.city`), so a change anywhere in the tree changes
  the field set. Three levels are expanded; below that, a field's nested definition is folded
  into its type text (`struct {"name":...}`), which still changes the id on any change there.
#}
{% macro schema_facet_fields(schema_json_expr) -%}
    {%- set level3 = "array<struct<name: string, type: string, description: string, fields: string>>" -%}
    {%- set level2 = "array<struct<name: string, type: string, description: string, fields: " ~ level3 ~ ">>" -%}
    {%- set level1 = "struct<fields: array<struct<name: string, type: string, description: string, fields: " ~ level2 ~ ">>>" -%}
    filter(
        flatten(transform(
            coalesce(from_json({{ schema_json_expr }}, '{{ level1 }}').fields, array()),
            f1 -> concat(
                array(named_struct('name', f1.name, 'type', f1.type, 'description', f1.description)),
                flatten(transform(
                    coalesce(f1.fields, array()),
                    f2 -> concat(
                        array(named_struct(
                            'name', concat(f1.name, '.', f2.name), 'type', f2.type, 'description', f2.description
                        )),
                        transform(
                            coalesce(f2.fields, array()),
                            f3 -> named_struct(
                                'name', concat(f1.name, '.', f2.name, '.', f3.name),
                                'type', if(f3.fields is null, f3.type, concat_ws(' ', f3.type, f3.fields)),
                                'description', f3.description
                            )
                        )
                    )
                ))
            )
        )),
        f -> f.name is not null
    )
{%- endmacro %}
