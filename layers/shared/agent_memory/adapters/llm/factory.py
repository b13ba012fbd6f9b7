"""Build the configured LLM client.

This module must stay importable without the ``anthropic`` SDK (slow to import, and not
needed by functions that never call an LLM): both adapters are imported inside
:func:`build_llm`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.config import Settings
    from agent_memory.ports import LLMClient


def build_llm(settings: Settings) -> LLMClient:
    """Return ``OfflineLLM()`` when ``LLM_PROVIDER=offline``, else an ``AnthropicClient``
    whose API key is read from Secrets Manager (``ANTHROPIC_SECRET_NAME``).

    Raises:
        ValueError: the provider is ``anthropic`` but no secret name is configured.
    """
    if settings.llm_provider == "offline":
        from agent_memory.adapters.llm.offline import OfflineLLM

        return OfflineLLM()

    if not settings.anthropic_secret_name:
        raise ValueError("ANTHROPIC_SECRET_NAME is required when LLM_PROVIDER=anthropic")

    from agent_memory.adapters.llm.anthropic import AnthropicClient, load_api_key

    return AnthropicClient(
        load_api_key(settings.anthropic_secret_name),
        base_url=settings.anthropic_base_url,
        max_retries=settings.llm_max_retries,
    )
