{#- A family of the sample registry: built only with the var sample_inputs (the main job, the tests). -#}
{{ config(enabled=var('sample_inputs', false)) }}
{{ registry_table('com.example', 'signup', 1) }}
