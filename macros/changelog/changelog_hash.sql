{#
  Row hash of the compared columns: lets a run classify rows by (key, hash) alone, so the diff
  shuffles and sorts 16 bytes of hash per row instead of every column.

  Each value is encoded so that two values with the same encoding are equal under `<=>` and, for
  flat columns, values equal under `<=>` share one encoding: NULL is `-`, a value is
  `<length>:<text>` (a length never starts with `-`, and the prefix makes the concatenation
  unambiguous). The text is canonical per type: timestamps as epoch microseconds (independent of the
  session time zone), floating point plus 0 (so -0.0 and 0.0 agree, as `<=>` has it), binary as hex,
  nested values as JSON with microsecond timestamps (strings escaped, so no two values collide).
  Nested floating point -0.0 and 0.0 hash differently and are reported as a change.

  The digest is SHA-256 truncated to 128 bits. Two different rows of one key get the same hash, and
  so a change goes unreported, with probability about 2^-128 per comparison; a 64-bit hash would
  make a missed change among billions of comparisons plausible over a dataset's life.
  changelog_hash_signature names the encoding and the compared columns; a state table whose hashes
  were computed otherwise is not used.
-#}
{% macro changelog_row_hash(compared, column_types, qualifier=none) -%}
    {%- set parts = [] -%}
    {%- for column in compared -%}
        {%- set name = ((qualifier ~ '.') if qualifier else '') ~ adapter.quote(column) -%}
        {%- set dtype = (column_types.get(column, 'string') or 'string') | lower -%}
        {%- if dtype.startswith('timestamp') and not dtype.startswith('timestamp_ntz') -%}
            {%- set text = 'cast(unix_micros(' ~ name ~ ') as string)' -%}
        {%- elif dtype in ['float', 'double'] -%}
            {%- set text = 'cast(cast(' ~ name ~ ' as double) + cast(0 as double) as string)' -%}
        {%- elif dtype == 'binary' -%}
            {%- set text = 'hex(' ~ name ~ ')' -%}
        {%- elif dtype.startswith('struct') or dtype.startswith('array') or dtype.startswith('map') -%}
            {%- set text = 'to_json(' ~ name ~ ", map('timestampFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSSXXX', "
                ~ "'timestampNTZFormat', 'yyyy-MM-dd HH:mm:ss.SSSSSS'))" -%}
        {%- elif dtype.startswith('string') or dtype.startswith('varchar') or dtype.startswith('char') -%}
            {%- set text = name -%}
        {%- else -%}
            {%- set text = 'cast(' ~ name ~ ' as string)' -%}
        {%- endif -%}
        {%- do parts.append("coalesce(concat(char_length(" ~ text ~ "), ':', " ~ text ~ "), '-')") -%}
    {%- endfor -%}
    {%- if parts | length == 0 -%}{%- do parts.append("''") -%}{%- endif -%}
    substring(unhex(sha2(concat({{ parts | join(', ') }}), 256)), 1, 16)
{%- endmacro %}

{% macro changelog_hash_signature(compared) -%}
    {{ return('v1:' ~ (compared | map('lower') | join(','))) }}
{%- endmacro %}
