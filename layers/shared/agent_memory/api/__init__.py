"""HTTP glue shared by the handlers: error mapping, request models, claims."""
