"""``open_batch``: the batch driver, the one writer of a batch directory.

Everything that can be wrong with the input is found before anything runs (``BatchInputError``). Then the
driver opens ``results.jsonl`` (resume: ids with a line are skipped unless ``redo_existing``), hands the rest to
the executor, and for each outcome appends the result line, counts it and yields it (the executor has put the
item's run files in ``OUTDIR/runs/``). ``BatchRun.stop`` starts nothing more and cancels the running items (no
line for them). Leaving the block stops what is still running and always writes ``summary.json``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host._exceptions import BatchInputError
from host.batch._attempt import RETRY_BACKOFF_S, ItemOutcome, ItemPlan
from host.batch._executor import BatchJob, Executor
from host.batch._items import BatchItem, read_items, select_slice
from host.batch._local import LocalExecutor
from host.batch._results import DoneItem, ResultsFile
from host.batch._summary import BatchSummary, write_summary
from host.cancel import CancelController
from host.config import AcpEntryConfig, EntryConfig, HostConfig, load_config
from host.records import KEEP_EVERY_RUN

__all__ = ["BatchResult", "BatchRun", "HintsOf", "open_batch"]

HintsOf = Callable[[EntryConfig, dict[str, Any]], list[str]]
"""Operator hints for a result line of an entry (host-side facts only); the CLI passes its own."""
_STOP_CLOSE_TIMEOUT_S: Final = 60.0
"""Bounds how long leaving the block waits for stopped items to be torn down."""
_DIR_MODE: Final = 0o700


@dataclasses.dataclass(frozen=True, slots=True)
class BatchResult:
    """One finished item: its id and the line written to ``results.jsonl``."""

    id: str
    line: dict[str, Any]


class BatchRun:
    """A batch in progress: iterate it for results as they are written; ``stop()`` ends it early."""

    def __init__(
        self, receive: MemoryObjectReceiveStream[BatchResult], controller: CancelController, summary: BatchSummary
    ) -> None:
        self._receive = receive
        self._controller = controller
        self.summary = summary
        """The running tally (``summary.to_json()`` is what ``summary.json`` gets)."""
        self.running = 0
        """How many items are running now."""

    def __aiter__(self) -> AsyncIterator[BatchResult]:
        return self._receive

    def stop(self, reason: object = "batch stopped") -> None:
        """Start nothing more and cancel the running items (their runs go down through the full ladder)."""
        self._controller.cancel(reason)

    @property
    def stopped(self) -> bool:
        """``stop`` was called."""
        return self._controller.signal.cancelled


@asynccontextmanager
async def open_batch(
    items: Sequence[BatchItem] | str | os.PathLike[str],
    *,
    outdir: str | os.PathLike[str],
    config: HostConfig | str | os.PathLike[str] | None = None,
    executor: Executor | None = None,
    provider: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    retries: int = 0,
    timeout_ms: float | None = None,
    permission: Literal["allow", "reject"] | None = None,
    workspace: Literal["shared", "worktree"] | None = None,
    redo_existing: bool = False,
    item_slice: str | None = None,
    hints_of: HintsOf | None = None,
    retry_backoff_s: float = RETRY_BACKOFF_S,
) -> AsyncGenerator[BatchRun]:
    """Run a batch of ``items`` (a list, or the path of a JSONL file) into ``outdir``; yield a ``BatchRun``.

    Args:
        items: the items, or a JSONL file of them (see ``read_items``).
        outdir: the batch directory: ``results.jsonl``, ``summary.json`` and ``runs/`` (its state directory).
        config: the host config, a config file, or ``None`` for the lookup order.
        executor: where the items run (default: ``LocalExecutor()``).
        provider: the entry of items that name none (default: the only entry, or ``echo``).
        cwd: the workspace of items that name none (default: the working directory).
        retries: extra attempts for an infrastructure failure.
        timeout_ms: each attempt's deadline unless the item sets one (default: the entry's ``timeout_ms``).
        permission: overrides the permission policy of the ACP entries the items use.
        workspace: the workspace of items that set none (default: each entry's ``workspace``). ``worktree`` runs
            each such item in a git worktree of its own; its changes are kept under ``outdir`` (the patch in
            ``runs/<run_id>.patch``, a ``subagent-host/<session_id>`` branch) and its result line carries ``changes``.
            On Ray the worktree is made from the repository at the item's ``cwd`` on the worker's node (its branch
            lives there) and the patch and changes file are copied into ``outdir``.
        redo_existing: run ids that already have a result line again.
        item_slice: ``START:STOP`` over the valid items.
        hints_of: adds ``hints`` to a result line.
        retry_backoff_s: the wait before the first retry (doubles per retry).

    Raises:
        BatchInputError: the input, a provider choice, the workspace or ``outdir`` is unusable (nothing ran).
        ConfigError: the config could not be loaded, or a used entry needs an unset variable.
    """
    if retries < 0:
        raise BatchInputError("retries must be >= 0")
    if not isinstance(config, HostConfig):
        config = load_config(config)
    executor = executor if executor is not None else LocalExecutor()
    names = config.entry_names()
    default = _default_provider(names, provider)
    if isinstance(items, str | os.PathLike):
        items = read_items(items, providers=names, default_provider=default)
    else:
        items = _resolved(items, names, default)
    items = select_slice(list(items), item_slice)
    base_cwd = _directory(cwd)
    plans = _plans(
        config,
        items,
        base_cwd=base_cwd,
        retries=retries,
        timeout_ms=timeout_ms,
        backoff_s=retry_backoff_s,
        workspace=workspace,
    )
    job_config = _job_config(config, {plan.provider for plan in plans}, permission, items)
    state_dir, results = _open_results(outdir)
    started = time.monotonic()
    summary = BatchSummary(selected=[item.id for item in items])
    try:
        done = results.done()
        wanted = set(summary.selected)
        summary.done = {item_id: result for item_id, result in done.items() if item_id in wanted}
        if not redo_existing:
            summary.skipped = len(summary.done)
            plans = [plan for plan in plans if plan.item.id not in summary.done]
        else:
            summary.done = {}
        # Written now too, so a reader (the dashboard) knows the total while the batch runs; rewritten at the end.
        write_summary(state_dir, summary.to_json())
        controller = CancelController()
        send, receive = anyio.create_memory_object_stream[BatchResult](max(1, executor.workers))
        run = BatchRun(receive, controller, summary)
        entries = job_config.providers
        writer = _Writer(results, summary, state_dir, send, run, hints_of, entries)
        job = BatchJob(
            config=job_config,
            state_dir=state_dir,
            plans=plans,
            stop=controller.signal,
            on_start=writer.on_start,
            deliver=writer.deliver,
        )
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_execute, executor, job, send, writer.finished, name="batch executor")
                try:
                    with receive:
                        yield run
                finally:
                    run.stop("batch closed")
                    with anyio.CancelScope(shield=True), anyio.move_on_after(_STOP_CLOSE_TIMEOUT_S):
                        await writer.finished.wait()
                    group.cancel_scope.cancel()
        except BaseExceptionGroup as group_error:
            # One failure (the executor's, or the caller's own from the block) is raised as itself.
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from group_error.exceptions[0].__cause__
            raise
    finally:
        summary.wall_ms = (time.monotonic() - started) * 1000
        results.close()
        write_summary(state_dir, summary.to_json())


async def _execute(
    executor: Executor, job: BatchJob, send: MemoryObjectSendStream[BatchResult], finished: anyio.Event
) -> None:
    try:
        with send:
            await executor.execute(job)
    finally:
        finished.set()


class _Writer:
    """Writes each outcome: its carried run records, its result line; then counts and forwards it."""

    def __init__(
        self,
        results: ResultsFile,
        summary: BatchSummary,
        state_dir: Path,
        send: MemoryObjectSendStream[BatchResult],
        run: BatchRun,
        hints_of: HintsOf | None,
        entries: Any,
    ) -> None:
        self._results = results
        self._summary = summary
        self._state_dir = state_dir
        self._send = send
        self._run = run
        self._hints_of = hints_of
        self._entries = entries
        self.finished = anyio.Event()

    def on_start(self, item_id: str) -> None:
        del item_id
        self._run.running += 1

    async def deliver(self, outcome: ItemOutcome) -> None:
        self._run.running -= 1
        line = outcome.line
        if line is None:
            return
        if self._hints_of is not None:
            hints = self._hints_of(self._entries[line["provider"]], line)
            if hints:
                line["hints"] = hints
        self._results.append(line)
        diagnostic, error_code = line.get("diagnostic"), line.get("error_code")
        self._summary.record(
            outcome.item_id,
            DoneItem(line["stop_reason"], float(line["duration_ms"]), diagnostic, error_code),
            attempts=int(line["attempts"]),
        )
        try:
            await self._send.send(BatchResult(outcome.item_id, line))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the consumer left the block: the line is written, nobody iterates any more


def _default_provider(names: list[str], requested: str | None) -> str | None:
    if requested is not None:
        if requested not in names:
            raise BatchInputError(f'unknown provider "{requested}" (configured: {", ".join(names)})')
        return requested
    if len(names) == 1:
        return names[0]
    return "echo" if "echo" in names else None


def _resolved(items: Sequence[BatchItem], names: list[str], default: str | None) -> list[BatchItem]:
    """Given items get the same provider checks as the lines of a file (their position counts as the line)."""
    seen: set[str] = set()
    resolved: list[BatchItem] = []
    for number, item in enumerate(items, start=1):
        if item.id in seen:
            raise BatchInputError(f'duplicate id "{item.id}"', number)
        seen.add(item.id)
        chosen = item.provider if item.provider is not None else default
        if chosen is None or chosen not in names:
            raise BatchInputError(f'unknown provider "{chosen}" (configured: {", ".join(names)})', number)
        resolved.append(item if item.provider == chosen else item.model_copy(update={"provider": chosen}))
    return resolved


def _open_results(outdir: str | os.PathLike[str]) -> tuple[Path, ResultsFile]:
    """Create ``outdir`` (0700), or make an existing one and its ``runs/`` private (0700); open ``results.jsonl``."""
    state_dir = Path(os.path.abspath(os.fspath(outdir)))
    try:
        state_dir.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise BatchInputError(f"cannot use {state_dir}: {exc.strerror or type(exc).__name__}") from exc
    for directory in (state_dir, state_dir / "runs"):
        try:
            if os.stat(directory).st_mode & 0o777 != _DIR_MODE:
                os.chmod(directory, _DIR_MODE)
        except FileNotFoundError:
            continue  # runs/ is created (0700) with the first record
        except OSError as exc:
            raise BatchInputError(
                f"cannot make {directory} private (0700): {exc.strerror or type(exc).__name__}"
            ) from exc
    try:
        return state_dir, ResultsFile.open(state_dir)
    except OSError as exc:
        raise BatchInputError(f"cannot use {state_dir}: {exc.strerror or type(exc).__name__}") from exc


def _directory(path: str | os.PathLike[str] | None) -> str:
    absolute: str = os.path.abspath(os.fspath(path) if path is not None else os.getcwd())
    if not os.path.isdir(absolute):
        raise BatchInputError(f"the workspace is not a directory: {absolute}")
    return absolute


def _plans(
    config: HostConfig,
    items: Sequence[BatchItem],
    *,
    base_cwd: str,
    retries: int,
    timeout_ms: float | None,
    backoff_s: float,
    workspace: Literal["shared", "worktree"] | None,
) -> list[ItemPlan]:
    plans: list[ItemPlan] = []
    for item in items:
        assert item.provider is not None
        entry = config.entry(item.provider)  # ConfigError: the entry needs an unset variable
        budget = item.timeout_ms if item.timeout_ms is not None else timeout_ms
        plans.append(
            ItemPlan(
                item=item,
                provider=item.provider,
                cwd=os.path.join(base_cwd, item.cwd) if item.cwd is not None else base_cwd,
                timeout_ms=budget if budget is not None else entry.timeout_ms,
                retries=retries,
                backoff_s=backoff_s,
                workspace=item.workspace or workspace or entry.workspace,
            )
        )
    return plans


def _job_config(config: HostConfig, used: set[str], permission: str | None, items: Sequence[BatchItem]) -> HostConfig:
    """Retention off (the batch directory keeps every run), each entry's own deadline moved into the plans, no child
    kept warm after its item (``session_idle_ms`` 0: an item is one-shot), and the permission
    override applied to the ACP entries used."""
    providers: dict[str, EntryConfig] = {}
    for name, entry in config.providers.items():
        # A batch never continues an item's session, so a warm child would only wait for its eviction.
        update: dict[str, object] = {"timeout_ms": None, "session_idle_ms": 0.0}
        if permission is not None and name in used:
            if not isinstance(entry, AcpEntryConfig):
                item_id = next(item.id for item in items if item.provider == name)
                raise BatchInputError(
                    f'--permission applies to ACP entries only (item "{item_id}" uses providers.{name}, {entry.kind})'
                )
            update["permission"] = permission
        providers[name] = entry.model_copy(update=update)
    return dataclasses.replace(config, providers=MappingProxyType(providers), keep_runs=KEEP_EVERY_RUN)
