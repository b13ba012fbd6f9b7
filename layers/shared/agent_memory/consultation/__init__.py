"""consultation."""
