"""Marquez-compatible read API over the warehouse (``read_routes``, ``MarquezReadApi``) and the
inputs of the lineage page (``lineage_page_inputs``)."""

from python_jobs.marquez_api.api import BadRequest, MarquezReadApi, NotFound, lineage_page_inputs
from python_jobs.marquez_api.routes import read_routes

__all__ = ["BadRequest", "MarquezReadApi", "NotFound", "lineage_page_inputs", "read_routes"]
