"""A chaos child: follows ``chaos.json`` in its working directory, then (usually) runs a fake agent in-process.

The script's keys: ``agent`` (the fake to run), ``env`` (switches for it), ``escapees`` (a list of ``setsid`` /
``doublefork`` / ``group``: SIGTERM-deaf descendants, stdio on ``/dev/null``), ``act`` (``exit_at_start``,
``signal_at_start``, ``close_stdout``, ``stderr_flood``, ``garbage``), ``signal``, ``canary``. Every process of the
run writes its pid to ``pid.<pid>`` next to the script.
"""

import json
import os
import runpy
import signal
import sys
import time

FLOOD_LINES = 2048


def write_pid(directory: str, pid: int) -> None:
    temporary = os.path.join(directory, f".pid.{pid}")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(str(pid))
    os.replace(temporary, os.path.join(directory, f"pid.{pid}"))


def become_escapee(directory: str) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    write_pid(directory, os.getpid())
    while True:
        time.sleep(60)


def plant(mode: str, directory: str) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            if mode in ("setsid", "doublefork"):
                os.setsid()
            if mode == "doublefork" and os.fork() != 0:
                os._exit(0)
            become_escapee(directory)
        finally:
            os._exit(0)
    if mode == "doublefork":
        os.waitpid(pid, 0)


def main() -> None:
    directory = os.getcwd()
    with open("chaos.json", encoding="utf-8") as handle:
        script = json.load(handle)
    write_pid(directory, os.getpid())
    for mode in script.get("escapees", []):
        plant(mode, directory)
    os.environ.update(script.get("env", {}))
    canary = script.get("canary", "")
    act = script.get("act")
    if act == "exit_at_start":
        os._exit(3)
    if act == "signal_at_start":
        os.kill(os.getpid(), getattr(signal, script["signal"]))
    if act == "close_stdout":
        os.close(1)
        while os.read(0, 65536):
            pass
        os._exit(0)
    if act == "stderr_flood":
        line = f"stderr flood {canary} " + "e" * 100 + "\n"
        os.write(2, (line * FLOOD_LINES).encode())
    if act == "garbage":
        os.write(1, f"not json {canary}\n\x00\xff garbage {canary}\n{{broken {canary}\n".encode("utf-8", "replace"))
    sys.argv = [script["agent"]]
    runpy.run_path(script["agent"], run_name="__main__")


main()
