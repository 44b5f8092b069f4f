"""Pyright-only contracts of the tool registry's stage-based mutability (docs/behaviour.md#registry-typing-contracts;
never executed).

Each line that must not type-check carries an ``expect-error`` marker comment; ``test_typing_contracts.py`` runs
pyright on this file and asserts that errors occur on exactly those lines.
"""

from __future__ import annotations

from host.cancel import CancelController, CancelSignal
from host.tools import ToolExecutionInput, ToolRunContext
from host.tools._types import ToolDispatchExecution, ToolExecution


def input_requires_a_signal() -> None:
    ToolExecutionInput(call_id="c", name="t", arguments={})  # expect-error
    ToolExecutionInput(call_id="c", name="t", arguments={}, signal=CancelController().signal)


def execution_signal_is_read_only(execution: ToolExecution, signal: CancelSignal) -> None:
    execution.signal = signal  # expect-error


def run_context_signal_is_read_only(context: ToolRunContext, signal: CancelSignal) -> None:
    context.signal = signal  # expect-error


def dispatch_signal_accepts_only_a_signal(dispatch: ToolDispatchExecution, signal: CancelSignal) -> None:
    dispatch.signal = None  # expect-error
    dispatch.signal = signal
    dispatch.name = "other"  # expect-error
    del dispatch.signal  # expect-error


def signal_state_is_read_only(signal: CancelSignal) -> None:
    signal.cancelled = True  # expect-error
