-- Every run of lineage.runs is counted once in job_runs.
with counted as (select sum(runs) as runs from {{ ref('job_runs') }})
select counted.runs, stored.runs
from counted
cross join (select count(*) as runs from {{ source('lineage', 'runs') }}) as stored
where counted.runs != stored.runs
