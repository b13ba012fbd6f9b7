"""Data governance use cases: erasure of a patient or a session, the project export (README "Your data")."""
