select id, cast(id * 10 as bigint) as amount
from range(0, {{ var('row_count', 5) }}) as numbers (id)
