-- Runs per job and their states, as an analyst reads them.
select
    jobs.namespace_name,
    jobs.name as job_name,
    count(*) as runs,
    sum(case when runs.current_run_state = 'COMPLETE' then 1 else 0 end) as completed
from {{ source('lineage', 'jobs') }} as jobs
inner join {{ source('lineage', 'runs') }} as runs on runs.job_uuid = jobs.uuid
group by jobs.namespace_name, jobs.name
