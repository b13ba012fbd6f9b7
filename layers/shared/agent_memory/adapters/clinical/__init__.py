"""adapters.clinical."""
