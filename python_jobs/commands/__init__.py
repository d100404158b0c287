"""CLI command modules; each defines ``register(groups)``."""
