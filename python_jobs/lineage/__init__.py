"""Pure helpers of the OpenLineage capability: input discovery, schema tokens."""
