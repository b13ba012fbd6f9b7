"""The suite's no-5xx check reads the local stacks' status log: only 5xx outside the documented
502 / 503 / 504 count."""

from __future__ import annotations

from pathlib import Path

from tests.support.status_log import undocumented_server_errors


def test_only_undocumented_server_errors_are_reported(tmp_path: Path) -> None:
    # Given: a status log with successes, client errors, documented 5xx and two undocumented ones
    log = tmp_path / "statuses.log"
    log.write_text(
        "200 GET /v1/health [ApiFunction]\n"
        "422 POST /v1/projects/p/sessions/s/messages [ChatFunction]\n"
        "500 POST /v1/projects/p/sessions/s/messages [ChatFunction]\n"
        "502 POST /v1/projects/p/sessions/s/messages [ChatFunction]\n"
        "503 POST /v1/projects/p/sessions/s/messages [ChatFunction]\n"
        "504 POST /v1/projects/p/sessions/s/messages [ChatFunction]\n"
        "501 GET /v1/projects/p/memory [ApiFunction]\n",
        encoding="utf-8",
    )

    # When / Then: the 500 and the 501 are reported, nothing else
    assert undocumented_server_errors(log) == [
        "500 POST /v1/projects/p/sessions/s/messages [ChatFunction]",
        "501 GET /v1/projects/p/memory [ApiFunction]",
    ]


def test_no_status_log_means_no_errors(tmp_path: Path) -> None:
    assert undocumented_server_errors(tmp_path / "absent.log") == []
