"""Domain models and pure logic (no AWS, no HTTP)."""
