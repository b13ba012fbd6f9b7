"""Data governance use cases: erasure of a patient or a session, the project export
(docs/architecture.md, "Data governance")."""
