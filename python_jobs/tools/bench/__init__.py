"""``bench all``: every area's benchmark in one Spark session, written as one Markdown report."""
