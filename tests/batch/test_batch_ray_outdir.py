"""OUTDIR after a batch on the session's local Ray cluster has the local executor's shape: worktree items run in
worktrees of the repository at their ``cwd`` (on a local cluster, the user's repository), the result lines carry the
same ``changes``, and each run's transcript, stderr tail, patch and changes file are in ``OUTDIR/runs/`` (0600), so
``runs apply``, ``runs show --patch`` and ``runs prune`` with ``--state-dir OUTDIR`` work the same. A patch larger
than what travels with an outcome is streamed whole; an item whose ``cwd`` the node cannot see ends with a closed
error code."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import BatchItem, RayExecutor, load_config, open_batch
from host.batch._ray import CWD_NOT_ON_NODE
from host.batch._run_files import INLINE_FILE_BYTES, worker_state_dir
from host.sessions import is_session_id
from tests.batch._helpers import acp_entry, result_lines, run_batch, tasks_file, write_config
from tests.conftest import MARKER_NAME
from tests.workspace._helpers import fs_ops, git, host_cli, make_repo, our_branches, worktree_paths

pytestmark = pytest.mark.anyio

_BIG_LINES = 40_000
"""``big.txt``'s lines: deleting it makes a patch of about 2.4 MB, over ``INLINE_FILE_BYTES``."""
_STDERR_SCRIPT = "import sys; sys.stderr.write('boot failed: no token\\n' * 3); sys.exit(3)"


def _marked(**env: str) -> dict[str, Any]:
    return acp_entry(**{MARKER_NAME: os.environ[MARKER_NAME]}, **env)


def _repo(path: Path) -> Path:
    repo = make_repo(path)
    (repo / "big.txt").write_text("".join(f"line {n} of a large tracked file\n" for n in range(_BIG_LINES)))
    git(repo, "add", "big.txt")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "big")
    return repo


def _editors(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "one": _marked(MOCK_FS_OPS=fs_ops(["write", "a.txt", "one\nTWO by child one\nthree\n"])),
            "two": _marked(MOCK_FS_OPS=fs_ops(["write", "new.txt", "made by child two\n"], ["delete", "b.txt"])),
            "big": _marked(MOCK_FS_OPS=fs_ops(["delete", "big.txt"])),
        },
    )


def _shape(line: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(line["session_id"], str)
    shaped = {key: value for key, value in line.items() if key not in ("run_id", "duration_ms", "session_id")}
    # The changes line of the output names the branch: the item's session's (docs/behaviour.md#workspaces-sessions).
    branch = line["changes"]["branch"]
    shaped["output"] = [{**block, "text": block["text"].replace(branch, "BRANCH")} for block in line["output"]]
    changes = dict(shaped["changes"])
    assert is_session_id(changes.pop("branch").removeprefix("subagent-host/"))
    del changes["base"]  # a baseline commit of the user's tree, made per run
    shaped["changes"] = changes
    return shaped


def _run_files(outdir: Path, run_id: str) -> dict[str, int]:
    """The suffixes of ``run_id``'s files in ``outdir/runs`` with their modes."""
    found: dict[str, int] = {}
    for path in (outdir / "runs").iterdir():
        if path.name.startswith(run_id):
            found[path.name.removeprefix(run_id)] = path.stat().st_mode & 0o777
    return found


async def test_a_worktree_batch_on_ray_has_the_local_outdir_and_its_patches_apply(
    tmp_path: Path, ray_cluster: str
) -> None:
    repo = _repo(tmp_path / "repo")
    config = _editors(tmp_path)
    tasks = tasks_file(
        tmp_path / "tasks.jsonl",
        [{"id": name, "task": f"edit {name}", "provider": name} for name in ("one", "two", "big")],
    )
    common = ("--config", str(config), "--cwd", str(repo), "--workspace", "worktree", "--workers", "2")
    local = await run_batch(str(tasks), "-o", str(tmp_path / "local"), *common, cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    remote = await run_batch(
        str(tasks), "-o", str(tmp_path / "ray"), *common, "--executor", "ray", "--ray-address", ray_cluster,
        cwd=tmp_path,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    local_lines = {line["id"]: line for line in result_lines(tmp_path / "local")}
    ray_lines = {line["id"]: line for line in result_lines(tmp_path / "ray")}
    assert {key: _shape(line) for key, line in ray_lines.items()} == {
        key: _shape(line) for key, line in local_lines.items()
    }
    outdir = tmp_path / "ray"
    for item_id, line in ray_lines.items():
        files = _run_files(outdir, line["run_id"])
        assert files == dict.fromkeys([".jsonl", ".patch", ".changes.json"], 0o600), item_id
        assert files.keys() == _run_files(tmp_path / "local", local_lines[item_id]["run_id"]).keys()
    # The large patch was streamed whole: byte-identical to the one the local executor kept.
    big_patch = (outdir / "runs" / f"{ray_lines['big']['run_id']}.patch").read_bytes()
    assert len(big_patch) > INLINE_FILE_BYTES
    assert big_patch == (tmp_path / "local" / "runs" / f"{local_lines['big']['run_id']}.patch").read_bytes()
    big_run = ray_lines["big"]["run_id"]
    shown = await host_cli("runs", "show", "--state-dir", str(outdir), big_run, "--patch", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout == big_patch
    # The worker's node keeps nothing of these runs once the driver has their files.
    node_runs = worker_state_dir() / "runs"  # the workers inherited the suite's SUBAGENT_HOST_STATE_DIR
    assert node_runs.is_dir()
    left = [path.name for path in node_runs.iterdir()]
    assert not [name for name in left if any(name.startswith(line["run_id"]) for line in ray_lines.values())]
    # runs apply --state-dir OUTDIR applies a Ray item's patch to the user's repository.
    for item_id in ("two", "big"):
        run_id = ray_lines[item_id]["run_id"]
        applied = await host_cli("runs", "apply", "--state-dir", str(outdir), run_id, cwd=tmp_path)
        assert applied.returncode == 0, applied.stderr
    assert (repo / "new.txt").read_text() == "made by child two\n"
    assert not (repo / "b.txt").exists() and not (repo / "big.txt").exists()
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert worktree_paths(repo) == [str(repo)]
    # runs prune --state-dir OUTDIR deletes the branches of the Ray runs it prunes (the local ones stay).
    ray_branches = sorted(line["changes"]["branch"] for line in ray_lines.values())
    assert set(ray_branches) <= set(our_branches(repo))
    pruned = await host_cli("runs", "prune", "--state-dir", str(outdir), "--keep", "0", cwd=tmp_path)
    assert pruned.returncode == 0, pruned.stderr
    assert sorted(our_branches(repo)) == sorted(line["changes"]["branch"] for line in local_lines.values())
    assert not list((outdir / "runs").glob("*.patch"))


async def test_a_failed_start_on_ray_keeps_the_childs_stderr_tail_as_locally(tmp_path: Path, ray_cluster: str) -> None:
    failing = {**_marked(), "command": sys.executable, "args": ["-c", _STDERR_SCRIPT]}
    config = write_config(tmp_path, {"broken": failing})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "only", "task": "t"}])
    local = await run_batch(str(tasks), "-o", str(tmp_path / "local"), "--config", str(config), cwd=tmp_path)
    remote = await run_batch(
        str(tasks), "-o", str(tmp_path / "ray"), "--config", str(config), "--executor", "ray",
        "--ray-address", ray_cluster, cwd=tmp_path,
    )  # fmt: skip
    assert (local.returncode, remote.returncode) == (1, 1), remote.stderr
    [local_line], [ray_line] = result_lines(tmp_path / "local"), result_lines(tmp_path / "ray")
    assert ray_line["diagnostic"] == local_line["diagnostic"]
    assert "stage: initialize" in ray_line["diagnostic"] or "stage: process" in ray_line["diagnostic"]
    # A start that failed is a recorded run: the line names it, and its record and stderr tail are in OUTDIR/runs.
    [local_tail], [ray_tail] = (sorted((tmp_path / name / "runs").glob("*.stderr")) for name in ("local", "ray"))
    assert local_line["run_id"] == local_tail.name.removesuffix(".stderr")
    assert ray_line["run_id"] == ray_tail.name.removesuffix(".stderr")
    assert ray_tail.read_bytes() == local_tail.read_bytes() == b"boot failed: no token\n" * 3
    assert ray_tail.stat().st_mode & 0o777 == 0o600
    run_id = ray_tail.name.removesuffix(".stderr")
    assert (tmp_path / "ray" / "runs" / f"{run_id}.jsonl").stat().st_mode & 0o777 == 0o600
    shown = await host_cli("runs", "show", "--state-dir", str(tmp_path / "ray"), run_id, "--stderr", cwd=tmp_path)
    assert shown.returncode == 0 and b"boot failed: no token" in shown.stdout


async def test_an_item_whose_cwd_the_node_cannot_see_ends_with_a_closed_error(tmp_path: Path, ray_cluster: str) -> None:
    del ray_cluster
    repo = make_repo(tmp_path / "repo")
    config = load_config(write_config(tmp_path, {"agent": _marked()}))
    items = [
        BatchItem(id="gone", task="t", cwd="not-on-this-node", workspace="worktree"),
        BatchItem(id="here", task="t", workspace="worktree"),
    ]
    with anyio.fail_after(90):
        async with open_batch(items, outdir=tmp_path / "out", config=config, cwd=repo, executor=RayExecutor(1)) as run:
            lines = {result.id: result.line async for result in run}
    assert lines["gone"] == {
        "schema": 1,
        "id": "gone",
        "run_id": None,
        "provider": "agent",
        "stop_reason": "error",
        "output": [],
        "error_code": CWD_NOT_ON_NODE,
        "duration_ms": 0,
        "attempts": 1,
    }
    assert lines["here"]["stop_reason"] == "completed" and "changes" not in lines["here"]  # no edits: no branch


async def test_a_retried_worktree_item_on_ray_keeps_only_its_last_attempts_changes(
    tmp_path: Path, ray_cluster: str
) -> None:
    del ray_cluster
    repo = make_repo(tmp_path / "repo")
    edit = fs_ops(["write", "a.txt", "edited then crashed\n"])
    config = load_config(write_config(tmp_path, {"agent": _marked(MOCK_FS_OPS=edit, MOCK_CRASH_AFTER_CHUNK="1")}))
    outdir = tmp_path / "out"
    with anyio.fail_after(90):
        async with open_batch(
            [BatchItem(id="only", task="edit", workspace="worktree")],
            outdir=outdir,
            config=config,
            cwd=repo,
            executor=RayExecutor(1),
            retries=2,
            retry_backoff_s=0.01,
        ) as run:
            [line] = [result.line async for result in run]
    assert line["attempts"] == 3 and "category: process-exit" in line["diagnostic"]
    # Every attempt's record came back; only the last attempt's branch, patch and changes file were kept.
    assert len(list((outdir / "runs").glob("*.jsonl"))) == 3
    assert our_branches(repo) == [line["changes"]["branch"]]
    assert [path.name for path in (outdir / "runs").glob("*.patch")] == [f"{line['run_id']}.patch"]
    assert len(list((outdir / "runs").glob("*.changes.json"))) == 1
    assert worktree_paths(repo) == [str(repo)]
