"""The crash-convergence fault suite (``python -m python_jobs faults``): ``suite`` orchestrates (no Spark),
``child`` is one process that may be killed at a point, ``collector`` kills and restarts the HTTP collector."""
