"""Browser fixtures for the dashboard tests: one headless Debian Chromium per test module, a fresh page per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.ui._helpers import CHROMIUM, CHROMIUM_ARGS, unmarked_environment


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with unmarked_environment():
        manager = sync_playwright().start()
        launched = manager.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        yield launched
    finally:
        launched.close()
        manager.stop()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    try:
        yield opened
    finally:
        context.close()
