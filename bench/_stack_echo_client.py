"""The mandated stack's floor of ``run --json hello``: the stdlib floor's exchange (``_stdlib_echo_client.py``) on the
stack the host must use, and nothing else.

It spawns the built-in echo agent exactly as the CLI does (``python -I -S host/_echo_agent.py``) with
``anyio.open_process`` under ``anyio.run`` (asyncio), runs initialize, session/new and prompt with hand-built JSON
lines, closes stdin, waits for the exit and prints the result as JSON. With ``--pydantic`` the printed result goes
through one pydantic v2 model, the least a host that validates at its edges with pydantic does. No config, no
records, no tool registry, no keeper: whatever ``subagent-host`` costs above this is its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

AGENT = Path(__file__).resolve().parent.parent / "host" / "_echo_agent.py"
_MAX_LINE = 1 << 20


async def _exchange() -> dict[str, Any]:
    async with await anyio.open_process([sys.executable, "-I", "-S", str(AGENT)], start_new_session=True) as child:
        assert child.stdin is not None and child.stdout is not None
        stdin = child.stdin
        lines = BufferedByteReceiveStream(child.stdout)

        async def request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            await stdin.send((json.dumps(message) + "\n").encode())
            while True:
                answer: dict[str, Any] = json.loads(await lines.receive_until(b"\n", _MAX_LINE))
                if answer.get("id") == request_id:
                    return answer

        await request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = await request(1, "session/new", {"cwd": str(Path.cwd()), "mcpServers": []})
        prompt = [{"type": "text", "text": "hello"}]
        await request(2, "session/prompt", {"sessionId": session["result"]["sessionId"], "prompt": prompt})
        await stdin.aclose()
        await child.wait()
    return {"stop_reason": "completed", "output": [{"type": "text", "text": "hello"}]}


def main() -> None:
    result = anyio.run(_exchange)
    if "--pydantic" in sys.argv[1:]:
        from pydantic import BaseModel

        class Result(BaseModel):
            stop_reason: str
            output: list[dict[str, str]]

        sys.stdout.write(Result.model_validate(result).model_dump_json() + "\n")
    else:
        sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
