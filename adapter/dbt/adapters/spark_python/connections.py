"""Credentials and connection manager that only rename the adapter type."""

from dataclasses import dataclass

from dbt.adapters.spark.connections import SparkConnectionManager, SparkCredentials

ADAPTER_TYPE = "spark_python"


@dataclass
class SparkPythonCredentials(SparkCredentials):
    @property
    def type(self) -> str:
        return ADAPTER_TYPE


class SparkPythonConnectionManager(SparkConnectionManager):
    TYPE = ADAPTER_TYPE
