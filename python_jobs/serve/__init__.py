"""The OpenLineage HTTP collector (``python -m python_jobs serve``): app, auth, HTTP limits, build loop."""
