-- lineage.runs holds the runs the test posted (the var expected_runs), every one COMPLETE.
select sum(runs) as runs, sum(completed) as completed
from {{ ref('job_runs') }}
having sum(runs) != {{ var('expected_runs', -1) }} or sum(completed) != sum(runs)
