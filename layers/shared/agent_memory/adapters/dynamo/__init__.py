"""adapters.dynamo."""
