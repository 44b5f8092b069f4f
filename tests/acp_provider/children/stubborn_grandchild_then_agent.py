"""Test child: spawn a grandchild that leaves the process group (``setsid``) and ignores SIGTERM, write its pid
to ``argv[1]``, then exec the fake ACP agent ``argv[2]``."""

from __future__ import annotations

import os
import subprocess
import sys

_GRANDCHILD = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    time.sleep(3600)\n"


def main() -> None:
    pid_file, agent = sys.argv[1], sys.argv[2]
    child = subprocess.Popen(
        [sys.executable, "-c", _GRANDCHILD],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with open(pid_file + ".tmp", "w") as handle:
        handle.write(str(child.pid))
    os.replace(pid_file + ".tmp", pid_file)
    os.execv(sys.executable, [sys.executable, agent])


if __name__ == "__main__":
    main()
