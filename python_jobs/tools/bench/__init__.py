"""Benchmarks: one harness (``harness``: timing, JVM probes, figures table; ``environment``, ``report`` and
``plots``: the Markdown report of ``bench all``) and one module per area, each run by ``bench <area>`` and
by ``bench all`` (``areas``, ``run_all``)."""
