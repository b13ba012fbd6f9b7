"""`make console-screenshots`: a PNG of every view of the team console, in Chinese and English,
as a project admin, into ``.local/screenshots/`` (git-ignored).

Starts its own local stack (offline LLM, a data directory of its own that is deleted afterwards),
seeds a console project (``tests.support.console_data``) and drives Debian's Chromium: the
browser's languages are zh-CN or en-US, its time zone America/New_York (times are shown in the
project's zone, Asia/Shanghai, anyway). Patients and sessions are shown opened on one patient and
one session, with the answer's "what the model saw" expanded.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.browser.console_site import VIEWS, chromium, open_console, show_view, sign_in
from tests.support.console_data import ADMIN, PATIENT, seed_console_project

OUT = Path(__file__).resolve().parents[2] / ".local" / "screenshots"
LOCALES = {"zh": "zh-CN", "en": "en-US"}


def shoot(out: Path) -> list[Path]:
    """Write the screenshots; returns their paths."""
    from infra.local.stack import LocalStack

    written: list[Path] = []
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as data_dir, LocalStack(
        port=0, moto_port=0, isolated=True, anthropic_api_key="", data_dir=Path(data_dir),
        env_overrides={"LLM_PROVIDER": "offline"},
    ) as stack, chromium() as browser:
        seeded = seed_console_project(stack, prefix="screens")
        for lang, locale in LOCALES.items():
            context, page = open_console(browser, stack.base_url, locale=locale)
            sign_in(page, stack.base_url, seeded.project_id, seeded.token(ADMIN))
            for view in VIEWS:
                show_view(page, view)
                written.append(_save(page, out / f"console-{lang}-{view}.png"))
            show_view(page, "patients", PATIENT)
            page.wait_for_selector("#trend-chart[data-points]")
            written.append(_save(page, out / f"console-{lang}-patient.png"))
            show_view(page, "sessions", f"chat-{ADMIN}")
            page.locator("button.show-context").first.click()
            page.wait_for_selector(".model-context details")
            written.append(_save(page, out / f"console-{lang}-session.png"))
            context.close()
    return written


def _save(page: object, path: Path) -> Path:
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    for written_path in shoot(parser.parse_args().out):
        print(written_path)
