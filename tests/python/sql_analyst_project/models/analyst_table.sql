-- A model that writes (a table): the endpoint refuses it, and `dbt build` reports it as the one error.
{{ config(materialized='table') }}
select 1 as one
