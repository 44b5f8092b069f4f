"""The chaos draws: what one child does, picked at random from a seeded ``random.Random``.

Each draw is an entry name, the child's ``chaos.json`` script and whether the run is cancelled (and when).
A hanging behaviour is always ended: by its entry's ``timeout_ms``, or by a cancel.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Final

from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME

OUTPUT_FLOOD_ENABLED: Final = True
"""The "output flood past ``max_output_bytes``" draw: the run ends ``error`` / ``output-limit`` at the bound."""
OUTPUT_FLOOD_MIB: Final = 12
"""Past the 8 MiB default of ``max_output_bytes``."""

TIMEOUT_MS: Final = 700
"""The ``timeout_ms`` of the ``*-timeout`` entries."""

_ACP_STOPS: Final = ("end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled")
_SDK_REASONS: Final = ("completed", "aborted", "error", "none")
_HANGS: Final = frozenset({"hang", "ignored-cancel", "crash-on-cancel", "sdk-hang", "sdk-hang-after-chunk"})
_CANCEL_ONLY: Final = frozenset({"crash-on-cancel"})


@dataclass(frozen=True, slots=True)
class Draw:
    """One run of the batch."""

    behaviour: str
    entry: str
    script: dict[str, Any] = field(default_factory=dict[str, Any])
    cancel_after_s: float | None = None


def _acp(rng: random.Random, canary: str) -> tuple[str, dict[str, Any]]:
    choices = [
        "normal",
        "crash-initialize",
        "crash-prompt",
        "crash-after-chunk",
        "exit-at-start",
        "signal-death",
        "close-stdout",
        "hang",
        "ignored-cancel",
        "crash-on-cancel",
        "stderr-flood",
        "giant-line",
        "garbage",
    ]
    if OUTPUT_FLOOD_ENABLED:
        choices.append("output-flood")
    behaviour = rng.choice(choices)
    env: dict[str, str] = {"MOCK_TEXT": "chaos answer"}
    script: dict[str, Any] = {"agent": str(FAKE_ACP_AGENT), "canary": canary, "env": env}
    if behaviour == "normal":
        env["MOCK_STOP"] = rng.choice(_ACP_STOPS)
    elif behaviour == "crash-initialize":
        env["MOCK_CRASH_ON_INITIALIZE"] = "1"
    elif behaviour == "crash-prompt":
        env["MOCK_CRASH_ON_PROMPT"] = "1"
    elif behaviour == "crash-after-chunk":
        env["MOCK_CRASH_AFTER_CHUNK"] = "1"
    elif behaviour == "hang":
        env["MOCK_HANG"] = "1"
    elif behaviour == "ignored-cancel":
        env |= {"MOCK_HANG": "1", "MOCK_IGNORE_CANCEL": "1", "MOCK_TRAP_SIGTERM": "1"}
    elif behaviour == "crash-on-cancel":
        env |= {"MOCK_HANG": "1", "MOCK_CRASH_ON_CANCEL": "1"}
    elif behaviour == "giant-line":
        env["MOCK_HUGE_CHUNK_MIB"] = "2"
    elif behaviour == "output-flood":
        env["MOCK_HUGE_CHUNK_MIB"] = str(OUTPUT_FLOOD_MIB)
    return behaviour, script


def _sdk(rng: random.Random, canary: str) -> tuple[str, dict[str, Any]]:
    behaviour = rng.choice(
        [
            "sdk-normal",
            "sdk-exit-before-init",
            "sdk-exit-during-prompt",
            "sdk-prompt-error",
            "sdk-hang",
            "sdk-hang-after-chunk",
            "sdk-noise",
            "sdk-malformed-event",
            "exit-at-start",
            "signal-death",
            "close-stdout",
            "stderr-flood",
            "garbage",
        ]
    )
    env: dict[str, str] = {}
    script: dict[str, Any] = {"agent": str(FAKE_DSH_RUNTIME), "canary": canary, "env": env}
    if behaviour == "sdk-normal":
        env["FAKE_REASON_KIND"] = rng.choice(_SDK_REASONS)
    elif behaviour == "sdk-exit-before-init":
        env["FAKE_EXIT_BEFORE_INIT"] = "1"
    elif behaviour == "sdk-exit-during-prompt":
        env["FAKE_EXIT_DURING_PROMPT"] = "1"
    elif behaviour == "sdk-prompt-error":
        env["FAKE_PROMPT_ERROR"] = "1"
    elif behaviour == "sdk-hang":
        env["FAKE_HANG_PROMPT"] = "1"
    elif behaviour == "sdk-hang-after-chunk":
        env["FAKE_HANG_AFTER_CHUNK"] = "1"
    elif behaviour == "sdk-noise":
        env["FAKE_PRE_RECEIPT_NOISE"] = "1"
    elif behaviour == "sdk-malformed-event":
        env["FAKE_MALFORMED_EVENT"] = "1"
    return behaviour, script


def draw(rng: random.Random, canary: str) -> Draw:
    """Draw one run: provider, behaviour, escapees, entry (with or without ``timeout_ms``) and cancel."""
    kind = rng.choice(("acp", "sdk"))
    behaviour, script = (_acp if kind == "acp" else _sdk)(rng, canary)
    if behaviour == "exit-at-start":
        script["act"] = "exit_at_start"
    elif behaviour == "signal-death":
        script |= {"act": "signal_at_start", "signal": rng.choice(("SIGKILL", "SIGTERM", "SIGABRT"))}
    elif behaviour in ("close-stdout", "stderr-flood", "garbage"):
        script["act"] = behaviour.replace("-", "_")
    roll = rng.random()
    script["escapees"] = ["setsid"] if roll < 0.1 else ["doublefork"] if roll < 0.2 else []
    timed = rng.random() < 0.3 and behaviour not in _CANCEL_ONLY
    entry = f"{kind}-timeout" if timed else kind
    cancel_after_s: float | None = None
    if rng.random() < 0.25 or (behaviour in _HANGS and not timed):
        cancel_after_s = rng.uniform(0.0, 0.4)
    return Draw(behaviour=behaviour, entry=entry, script=script, cancel_after_s=cancel_after_s)
