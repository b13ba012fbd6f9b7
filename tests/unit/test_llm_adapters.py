"""The LLM adapters' pure parts: the turn's deadline from the Lambda context and API Gateway's
timeout, and the offline provider built without importing the ``anthropic`` SDK. The Anthropic
client itself (HTTP to a local server) is tested in ``tests/integration/test_anthropic_client.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.adapters.llm.deadline import deadline_from_context

REPO = Path(__file__).resolve().parents[2]


class _FakeLambdaContext:
    def __init__(self, remaining_ms: int) -> None:
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms


@pytest.mark.parametrize(
    ("remaining_ms", "expected"),
    [
        (60_000, 100.0 + 30.0 - 3.0),  # Lambda has 60 s left: API Gateway's 30 s binds
        (10_000, 105.0 + 10.0 - 3.0),  # Lambda has 10 s left: the Lambda binds
    ],
)
def test_b16_deadline_from_context_picks_the_smaller_budget(remaining_ms: int, expected: float) -> None:
    deadline = deadline_from_context(
        _FakeLambdaContext(remaining_ms),
        started_monotonic=100.0,
        api_gateway_timeout_s=30.0,
        reserve_s=3.0,
        now=lambda: 105.0,
    )

    assert deadline == pytest.approx(expected)


def test_factory_offline_provider_never_imports_anthropic() -> None:
    code = (
        "import sys\n"
        "from agent_memory.config import Settings\n"
        "from agent_memory.wiring import build_llm\n"
        "llm = build_llm(Settings(FLOW_LOG_TABLE='f', MEMORY_TABLE='m', SESSIONS_TABLE='s'))\n"
        "print(llm.provider, 'anthropic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "layers" / "shared"), "PATH": "", "LLM_PROVIDER": "offline"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "offline False"
