"""hot_memory."""
