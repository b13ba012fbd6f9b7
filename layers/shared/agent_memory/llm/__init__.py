"""LLM adapters behind one port (:class:`agent_memory.llm.port.LLMClient`).

Only ``agent_memory.llm.anthropic_client`` imports the ``anthropic`` SDK (about 1.5 s);
nothing else in the package may import it.
"""
