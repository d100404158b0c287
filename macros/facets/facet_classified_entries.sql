{#
  facet_refs' classified entries, and the prepare step that stores a batch's once.

      classified_entries(e)  one row per facet of the window's events: its place, disposition
                             (accepted, dropped, rejected) with the reason, type, and the
                             SHA-256 of its canonical body
      stored_hashes          the hashes of the window's accepted entries that facet_refs already
                             stores (a row with stores_body)

  Parsing a facet's body into canonical JSON is most of facet_refs' work. The stored hashes grow
  with every body ever stored: joined with the batch by a shuffle, they cost each build in
  proportion to history. Looking up only the batch's hashes (a semi join that broadcasts them)
  needs the hashes before the statement that writes the rows; Spark inlines a CTE at each
  reference, so a second reference to the entries would parse every body twice. On a build that
  appends, the prepare step therefore stores the entries once (a scratch table) and the model's
  statement reads them, and the stored hashes, from there. A first build has nothing stored and
  classifies inline.
#}

{#- The CTEs up to `classified_entries` for the events matching `predicate` (see facet_entry_ctes). -#}
{% macro facet_classified_entry_ctes(events, predicate) -%}
{{ facet_entry_ctes(events, predicate) }},

classification as (
    select
        lower(facet_name) as facet_name_lower,
        max(facet_type) as facet_type
    from {{ ref('facet_classification') }}
    group by lower(facet_name)
),

checked_entries as (
    select
        facet_row_key,
        {{ facet_event_columns() }},
        {{ facet_place_columns() }},
        octet_length(body_text) as facet_bytes,
        {{ facet_is_dropped('facet_name') }} as is_dropped,
        case
            when not {{ facet_is_dropped('facet_name') }} then {{ facet_canonical_json('body_text') }}
        end as canonical_body
    from facet_entries
),

classified_entries as (
    select
        checked_entries.facet_row_key,
        {{ facet_event_columns('checked_entries') }},
        {{ facet_place_columns('checked_entries') }},
        checked_entries.facet_bytes,
        case
            when checked_entries.is_dropped then 'dropped'
            when checked_entries.facet_name = '' then 'rejected'
            when checked_entries.canonical_body is null then 'rejected'
            when not startswith(checked_entries.canonical_body, '{') then 'rejected'
            else 'accepted'
        end as disposition,
        case
            when checked_entries.is_dropped then null
            when checked_entries.facet_name = '' then 'facet name is empty'
            when checked_entries.canonical_body is null then 'facet body is not valid JSON (or repeats a key)'
            when not startswith(checked_entries.canonical_body, '{') then 'facet body is not a JSON object'
        end as reject_reason,
        case
            when checked_entries.section = 'inputFacets' then 'INPUT'
            when checked_entries.section = 'outputFacets' then 'OUTPUT'
            when checked_entries.section = 'facets' then coalesce(classification.facet_type, 'UNKNOWN')
        end as facet_type,
        {{ facet_body_hash('checked_entries.canonical_body') }} as canonical_hash,
        octet_length(checked_entries.canonical_body) as body_bytes
    from checked_entries
    left join classification
        on
            checked_entries.section = 'facets'
            and lower(checked_entries.facet_name) = classification.facet_name_lower
)
{%- endmacro %}

{#- facet_refs' `classified_entries` for its window: on a build that appends, the entries its prepare
    step stored; on a first build, classified inline. -#}
{% macro facet_window_classified_entry_ctes() -%}
{%- if appends_to_existing() -%}
classified_entries as (
    select
        {{ facet_classified_columns() }}
    from {{ input_window_scratch('batch_entries') }}
)
{%- else -%}
{{ facet_classified_entry_ctes(ref('stg_lineage_events'), in_input_window('source_events')) }}
{%- endif -%}
{%- endmacro %}

{#- The columns of a classified entry, in order. -#}
{% macro facet_classified_columns() -%}
    facet_row_key,
    {{ facet_event_columns() }},
    {{ facet_place_columns() }},
    facet_bytes,
    disposition,
    reject_reason,
    facet_type,
    canonical_hash,
    body_bytes
{%- endmacro %}

{#- input_window.prepare of facet_refs: on a build that appends, stores the window's classified
    entries (`batch_entries`) and names the stored hashes among theirs (`stored_hashes`). -#}
{% macro facet_prepare_refs_batch(window) -%}
    {%- if not appends_to_existing() -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set entries -%}
        with
        {{ facet_classified_entry_ctes(ref('stg_lineage_events'), in_input_window('source_events')) }}

        select
            {{ facet_classified_columns() }}
        from classified_entries
    {%- endset -%}
    {%- set batch = windowed_append_scratch('batch_entries', entries) -%}
    {%- set hashes -%}
        select distinct canonical_hash as body_hash from {{ batch }} where disposition = 'accepted'
    {%- endset -%}
    {%- do windowed_append_scratch('stored_hashes', facet_stored_hashes(window, hashes, 'stored.stores_body'),
        stored=false) -%}
    {{ return({'scratch': ['batch_entries', 'stored_hashes']}) }}
{%- endmacro %}
