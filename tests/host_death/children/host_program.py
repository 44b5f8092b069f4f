"""A program using ``Host``: runs one delegation to the config's only entry and waits for it (it never ends).

``argv``: the config path, then the anyio backend (``asyncio`` or ``trio``).
"""

import os
import sys

import anyio

from host import CancelController, Host, load_config


async def main(config_path: str) -> None:
    config = load_config(config_path)
    (name,) = config.providers
    async with Host.open(config, parent_cwd=os.getcwd()) as host:
        await host.execute(f"delegate_{name}", {"task": "hang"}, signal=CancelController().signal)


anyio.run(main, sys.argv[1], backend=sys.argv[2])
