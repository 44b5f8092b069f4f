"""Fault-injection seams for the delegation tool: an ACP provider over a real child whose final exit wait fails."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import TaskGroup

from host import CancelController
from host._exceptions import ProcessTreeSurvivedError
from host.acp_provider._run import AcpRunSpec, start_acp_run
from host.config import AcpEntryConfig
from host.run._contracts import Capabilities, SubagentRequest, SubagentRun
from host.stream import ProviderKind
from host.tools import (
    JobRunner,
    ToolExecutionInput,
    ToolRegistry,
    create_delegation_tool,
    create_job_tools,
    install_timeout_policy,
)
from tests.acp_provider._helpers import agent_entry, agent_spec
from tests.acp_provider._seams import decorated_spawn, reject_final_exit_wait_after_exit


@dataclass
class _SeamProvider:
    """An ACP provider over a real child whose final exit wait is rejected (docs/behaviour.md#acp-test-seams seam)."""

    spec: AcpRunSpec
    task_group: TaskGroup
    name: str = "acp"
    kind: ProviderKind = "acp"
    capabilities: Capabilities = Capabilities(agent_options=False)

    async def start(self, request: SubagentRequest) -> SubagentRun:
        raw = ProcessTreeSurvivedError("cleanup failed at /private/path with SECRET_TOKEN")
        spawn = decorated_spawn(reject_final_exit_wait_after_exit(raw))
        return await start_acp_run(request, self.spec, task_group=self.task_group, spawn=spawn)


@asynccontextmanager
async def seam_registry(tmp_path: Path, **env: str) -> AsyncGenerator[tuple[ToolRegistry, JobRunner]]:
    entry: AcpEntryConfig = agent_entry(eof_grace_ms=200, grace_ms=200)
    spec = agent_spec(tmp_path, env, eof_grace_ms=200, grace_ms=200)
    async with anyio.create_task_group() as group:
        runner = JobRunner(group)
        registry = ToolRegistry()
        install_timeout_policy(registry)
        provider = _SeamProvider(spec, group)
        registry.register(create_delegation_tool(provider, entry, jobs=lambda: runner))
        for definition in create_job_tools(lambda: runner).values():
            registry.register(definition)
        try:
            yield registry, runner
        finally:
            await runner.aclose()


def delegate(arguments: dict[str, object]) -> ToolExecutionInput:
    return ToolExecutionInput(call_id="c1", name="delegate_acp", arguments=arguments, signal=CancelController().signal)
