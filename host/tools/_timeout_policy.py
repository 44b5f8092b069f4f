"""The zero-config timeout policy: one ``tools/execute`` wrapper enforcing each tool's ``timeout_ms``
(docs/behaviour.md#registry-timeout-policy).

Install it before any other wrapper so its budget covers everything inside. The deadline is cooperative: the body
is notified through its fused signal and still awaited. Replacement is keyed on the policy's own timer having
fired, never on the result's shape, so ``ABORTED``/``ABORTED_BEFORE_DISPATCH`` and tool failures all become
``TOOL_TIMEOUT``, while a caller cancel that came first keeps the registry's classification.
"""

from __future__ import annotations

from collections.abc import Callable

from host.cancel import deadline, timeout_of
from host.tools._registry import ToolRegistry
from host.tools._results import TOOL_TIMEOUT, tool_timeout_result
from host.tools._types import ExecuteNext, ToolDispatchExecution, ToolResult

__all__ = ["install_timeout_policy"]


def install_timeout_policy(registry: ToolRegistry) -> Callable[[], None]:
    """Register the timeout policy wrapper on ``registry``; return its idempotent remover."""

    async def timeout_policy(execution: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        definition = registry.get(execution.name)
        budget = definition.timeout_ms if definition is not None else None
        if budget is None:
            return await call_next()
        async with deadline(execution.signal, budget, TOOL_TIMEOUT) as derived:
            upstream = execution.signal
            execution.signal = derived
            try:
                result = await call_next()
            finally:
                execution.signal = upstream
            if timeout_of(derived, TOOL_TIMEOUT) is not None:
                return tool_timeout_result(budget)
            return result

    return registry.on_execute(timeout_policy)
