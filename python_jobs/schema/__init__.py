"""Dataset schemas as Apache Arrow schemas: type mapping, serialization and change classification."""
