"""``host.server`` repeats the console entry's ``serve`` defaults instead of importing the console package: they
agree."""

from __future__ import annotations

from host.server import _options
from subagent_host_cli import _parser


def test_the_serve_defaults_agree_with_the_console_entry() -> None:
    assert _options.DEFAULT_HTTP_HOST == _parser.DEFAULT_HTTP_HOST
    assert _options.DEFAULT_MAX_CONCURRENT_RUNS == _parser.DEFAULT_MAX_CONCURRENT_RUNS
