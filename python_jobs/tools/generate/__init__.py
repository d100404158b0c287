"""Every synthetic input the project writes, in one place: the realistic sample of the main job, and the
benchmarks' workloads. Pure Python except ``items`` (a Spark frame), deterministic for a given spec.

- ``sample``: ``generate_sample(SampleSpec(size, seed), out) -> SampleManifest`` (lineage, CRM exports,
  registry and self-describing events; ``pipelines``, ``crm`` and ``registry`` make the parts).
- ``lineage``: the lineage benchmark's events (``SyntheticSpec``, ``events``, ``write_events``) and the
  Marquez proposal's example (``proposal_example``).
- ``facets``: the facet benchmark's history (``SyntheticConfig``, ``synthetic_events``).
- ``items``: the changelog benchmark's snapshots (``ItemChurn``, ``items_snapshot_frame``).
- ``registry.checkout_events``: the registry benchmark's events.
"""
