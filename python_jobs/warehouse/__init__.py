"""The warehouse as a whole: the main job (``main_job``), its fingerprint (``fingerprint``) and the lineage
of its own dbt builds (``self_lineage``)."""
