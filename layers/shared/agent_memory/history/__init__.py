"""The history book: weekly reports (``reports``: their sections, the read view, corrections) and
the yearly summaries built from them (``yearly``)."""
