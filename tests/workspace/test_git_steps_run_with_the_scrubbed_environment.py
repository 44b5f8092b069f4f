"""The host's git steps run with the children's scrubbed environment: a clean filter that a child named in the
repository's shared config (which it can write) runs in the host's ``git add -A`` and sees no credential-shaped
or ``DSH_*`` variable of the host, only what the child itself was given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._helpers import cli_env
from tests.workspace._helpers import fs_ops, host_cli, make_repo, worktree_config

pytestmark = pytest.mark.anyio


async def test_a_filter_the_child_configured_sees_no_credential_of_the_host(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    dump = tmp_path / "filter-env.txt"
    # What a child can do from its worktree: name a filter in the shared config and give it a file to clean.
    spy = f'\n[filter "spy"]\n\tclean = "env >> \'{dump}\'; cat"\n'
    ops = fs_ops(
        ["append", str(repo / ".git" / "config"), spy],
        ["write", ".gitattributes", "spied.txt filter=spy\n"],
        ["write", "spied.txt", "the child's file\n"],
    )
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_FS_OPS": ops, "MOCK_TEXT": "ok"}})
    env = {
        **cli_env(),
        "SPY_PLAIN_SETTING": "visible-value",
        "SPY_SERVICE_TOKEN": "token-value-1",
        "SPY_DB_PASSWORD": "password-value-2",
        "DSH_SPY_CONTROL": "control-value-3",
    }
    done = await host_cli(
        "run", "--config", str(config), "--state-dir", str(tmp_path / "state"), "--json", "go", cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {entry["path"] for entry in result["changes"]["files"]} == {".gitattributes", "spied.txt"}
    seen = dump.read_text()
    assert "SPY_PLAIN_SETTING=visible-value" in seen  # the filter ran in the host's step, with the ambient rest
    for secret in ("token-value-1", "password-value-2", "control-value-3"):
        assert secret not in seen
