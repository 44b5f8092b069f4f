"""A program using ``Host``: one completed delegation (its child stays warm in the session), then ``ready`` on
stdout, then it waits forever. ``argv``: the config path."""

import os
import sys

import anyio

from host import CancelController, Host, load_config


async def main(config_path: str) -> None:
    config = load_config(config_path)
    (name,) = config.providers
    async with Host.open(config, parent_cwd=os.getcwd()) as host:
        result = await host.execute(f"delegate_{name}", {"task": "stay warm"}, signal=CancelController().signal)
        assert not result.is_error
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await anyio.sleep_forever()


anyio.run(main, sys.argv[1])
