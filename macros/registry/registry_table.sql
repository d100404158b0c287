{#
  One typed table per vendor/name/model. A model file needs one line:
      {{ registry_table('com.example', 'checkout', 1) }}
  It sets the `registry_table` materialization and renders the select of new events.
#}
{% macro registry_table(vendor, name, model) -%}
    {{ config(materialized='registry_table', registry_family={'vendor': vendor, 'name': name, 'model': model | int}) }}
    {{- registry_event_select(vendor, name, model, '', this) }}
{%- endmacro %}

{% macro registry_create_table_sql(relation, columns) -%}
    create table {{ relation }} (
    {%- for column in registry_event_columns() + columns %}
        {{ column.name }} {{ column.spark_type | lower }}{{ "," if not loop.last }}
    {%- endfor %}
    ) using {{ config.get('file_format', 'parquet') }}
{%- endmacro %}

{#
  Brings `relation` up to the registry's columns before a load: creates it, or appends the
  columns a new ADDITION version introduced (ALTER TABLE ADD COLUMNS keeps every existing row).
  Column-count guard: the load names every column it writes, so a table holding columns this
  load does not know (the registry moved on while we ran) gets NULLs there and never shifts a
  value into a neighbour. A column whose type differs from the registry stops the run.
#}
{% macro registry_migrate(relation, columns) %}
    {%- set existing = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- if existing is none -%}
        {%- do run_query(registry_create_table_sql(relation, columns)) -%}
        {%- do adapter.cache_added(relation.incorporate(type='table')) -%}
        {{ return({'created': true, 'added': columns | map(attribute='name') | list, 'unknown': []}) }}
    {%- endif -%}
    {%- set current = {} -%}
    {%- for column in adapter.get_columns_in_relation(existing) -%}
        {%- do current.update({column.name | lower: column.data_type | lower}) -%}
    {%- endfor -%}
    {%- set expected = registry_event_columns() + columns -%}
    {%- set missing = [] -%}
    {%- set mismatched = [] -%}
    {%- for column in expected -%}
        {%- set have = current.get(column.name | lower) -%}
        {%- if have is none -%}
            {%- do missing.append(column) -%}
        {%- elif have != column.spark_type | lower -%}
            {%- do mismatched.append(column.name ~ ' is ' ~ have ~ ' in the table, ' ~ column.spark_type ~ ' in the registry') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if mismatched -%}
        {%- do exceptions.raise_compiler_error(
            'registry table ' ~ relation ~ ' disagrees with the registry, nothing loaded: ' ~ mismatched | join('; ')
        ) -%}
    {%- endif -%}
    {%- set expected_names = expected | map(attribute='name') | map('lower') | list -%}
    {%- set unknown = [] -%}
    {%- for name in current.keys() if name not in expected_names -%}
        {%- do unknown.append(name) -%}
    {%- endfor -%}
    {%- if unknown -%}
        {%- do log('registry table ' ~ relation ~ ' has ' ~ unknown | length ~ ' column(s) this load does not know ('
            ~ unknown | join(', ') ~ '); the load names its columns, so they stay NULL for these rows', info=true) -%}
    {%- endif -%}
    {%- if missing -%}
        {%- set alter -%}
            alter table {{ relation }} add columns (
            {%- for column in missing %}
                {{ column.name }} {{ column.spark_type | lower }}{{ "," if not loop.last }}
            {%- endfor %}
            )
        {%- endset -%}
        {%- do run_query(alter) -%}
    {%- endif -%}
    {{ return({'created': false, 'added': missing | map(attribute='name') | list, 'unknown': unknown}) }}
{% endmacro %}

{#- The load's main statement: appends the new events' rows, published so readers see all or none. -#}
{% macro registry_load_statement(relation, columns, select_sql) -%}
    {%- set names = (registry_event_columns() + columns) | map(attribute='name') | list -%}
    {{ published_append_statement(relation, '`' ~ names | join('`, `') ~ '`', select_sql) }}
{%- endmacro %}

{% materialization registry_table, default %}
    {%- set family = config.require('registry_family') -%}
    {%- set vendor, name, model_number = family['vendor'], family['name'], family['model'] -%}
    {%- set label = vendor ~ '/' ~ name ~ ' model ' ~ model_number -%}
    {%- set target_relation = this.incorporate(type='table') -%}
    {%- set columns = registry_columns(vendor, name, model_number) -%}
    {{ run_hooks(pre_hooks) }}

    {%- set migration = registry_migrate(target_relation, columns) -%}
    {%- if migration['added'] and not migration['created'] -%}
        {%- do log('registry table ' ~ target_relation ~ ': added column(s) ' ~ migration['added'] | join(', '), info=true) -%}
    {%- endif -%}
    {%- if columns -%}
        {%- call statement('main') -%}
            {{ registry_load_statement(target_relation, columns, sql) }}
        {%- endcall -%}
    {%- else -%}
        {#- No version of the family registered yet: the table holds the event columns only, and the
            first load after `ingest registry` appends the registry's columns. -#}
        {%- do log('registry table ' ~ target_relation ~ ' built empty: the registry has no version of ' ~ label
            ~ ' yet (`python -m python_jobs ingest registry DIR` adds it)', info=true) -%}
        {%- call statement('main') -%}
            select 1 as no_registry_version where false
        {%- endcall -%}
    {%- endif -%}

    {%- set relations = [target_relation] -%}
    {%- for suffix in registry_recovery_suffixes(vendor, name, model_number) -%}
        {%- set recovery_relation = api.Relation.create(
            database=this.database, schema=this.schema, identifier=this.identifier ~ suffix, type='table') -%}
        {%- set recovery_columns = registry_columns(vendor, name, model_number, suffix) -%}
        {%- for version in registry_versions(vendor, name, model_number, suffix) -%}
            {%- do exceptions.warn(
                'BREAKING change in ' ~ label ~ ' version ' ~ version['version'] ~ ': ' ~ version['conflicts']
                ~ '. Its rows load into ' ~ recovery_relation ~ ', not ' ~ target_relation ~ ' (nothing is cast).'
            ) -%}
        {%- endfor -%}
        {%- do registry_migrate(recovery_relation, recovery_columns) -%}
        {%- call statement('recovery_' ~ loop.index) -%}
            {{ registry_load_statement(recovery_relation, recovery_columns,
                registry_event_select(vendor, name, model_number, suffix, recovery_relation)) }}
        {%- endcall -%}
        {%- do relations.append(recovery_relation) -%}
    {%- endfor -%}

    {{ run_hooks(post_hooks) }}
    {%- do persist_docs(target_relation, model) -%}
    {{ return({'relations': relations}) }}
{% endmaterialization %}
