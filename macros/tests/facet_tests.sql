{#- Fails for each value that repeats once compared in lower case. -#}
{% test facet_unique_lowercase(model, column_name) %}
with lowered as (
    select lower({{ column_name }}) as lowered_value
    from {{ model }}
    where {{ column_name }} is not null
)

select
    lowered_value,
    count(*) as occurrences
from lowered
group by lowered_value
having count(*) > 1
{% endtest %}

{#- Fails for each row whose JSON is not an object with exactly one key, equal to `name_column`. -#}
{% test facet_single_key_json(model, column_name, name_column) %}
with facet_keys as (
    select
        {{ column_name }} as facet_text,
        {{ name_column }} as expected_key,
        json_object_keys({{ column_name }}) as top_level_keys
    from {{ model }}
)

select
    expected_key,
    top_level_keys
from facet_keys
where
    top_level_keys is null
    or size(top_level_keys) != 1
    or top_level_keys[0] != expected_key
    or try_parse_json(facet_text) is null
{% endtest %}

{#- Fails for each stored body whose SHA-256 is not its key. -#}
{% test facet_body_matches_hash(model, column_name, hash_column) %}
select {{ hash_column }}
from {{ model }}
where {{ hash_column }} != {{ facet_body_hash(column_name) }}
{% endtest %}
