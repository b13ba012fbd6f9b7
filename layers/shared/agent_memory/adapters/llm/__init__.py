"""adapters.llm."""
