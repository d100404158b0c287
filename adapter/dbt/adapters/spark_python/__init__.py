"""dbt adapter plugin: the Spark adapter plus a ``session`` submission method for Python models.

dbt-spark can only submit Python models to Databricks. This plugin keeps everything
of the Spark adapter and adds one submission method that executes the compiled model
inside the SparkSession the ``session`` connection method already runs in.
"""

from dbt.adapters.base import AdapterPlugin
from dbt.adapters.spark_python.connections import (
    SparkPythonConnectionManager,
    SparkPythonCredentials,
)
from dbt.adapters.spark_python.impl import SparkPythonAdapter
from dbt.include import spark_python

Plugin = AdapterPlugin(
    adapter=SparkPythonAdapter,  # type: ignore[arg-type]
    credentials=SparkPythonCredentials,
    include_path=spark_python.PACKAGE_PATH,
    dependencies=["spark"],
)

__all__ = ["Plugin", "SparkPythonAdapter", "SparkPythonConnectionManager", "SparkPythonCredentials"]
