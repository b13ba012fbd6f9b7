"""Test doubles shared by the test suites (local servers, fixtures)."""
