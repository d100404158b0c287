"""The OpenLineage HTTP collector (``python -m python_jobs serve``): app, landing folder, build loop."""
