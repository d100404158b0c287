"""A self-contained HTML page that draws a lineage graph; see render.py."""
