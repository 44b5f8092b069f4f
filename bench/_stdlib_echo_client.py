"""The floor of ``run --json hello``: a stdlib-only process that spawns the built-in echo agent exactly as the CLI
does (``python -I -S host/_echo_agent.py``), runs the ACP exchange (initialize, session/new, prompt) over blocking
pipes, prints the result as JSON and closes the child."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

AGENT = Path(__file__).resolve().parent.parent / "host" / "_echo_agent.py"


def main() -> None:
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", str(AGENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    assert child.stdin is not None and child.stdout is not None

    def request(request_id: int, method: str, params: dict[str, object]) -> dict[str, object]:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(
            (json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n").encode()
        )
        child.stdin.flush()
        while True:
            message = json.loads(child.stdout.readline())
            if message.get("id") == request_id:
                return message

    request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = request(1, "session/new", {"cwd": str(Path.cwd()), "mcpServers": []})["result"]
    assert isinstance(session, dict)
    request(2, "session/prompt", {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hello"}]})
    child.stdin.close()
    child.wait()
    sys.stdout.write(json.dumps({"stop_reason": "completed", "output": [{"type": "text", "text": "hello"}]}) + "\n")


if __name__ == "__main__":
    main()
