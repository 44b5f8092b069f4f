"""``subagent-host run`` is built on the public API: its modules import only ``host``, the standard library, anyio
and sibling ``host.cli`` modules; the host internals they still need pass through one pinned seam
(``host/cli/_internals.py``, docs/design.md "host._host and the CLI")."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

CLI = REPO_ROOT / "host" / "cli"
SEAM = "host.cli._internals"
SEAM_IMPORTS = {
    "host._files": {"open_regular"},
    "host._json": {"format_ms"},
    "host.process": {"scrubbed_names"},
    "host.records": {"encode_line"},
    "host.sessions": {"newest_session"},
}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """Every ``(module, names)`` the file imports, at any depth (``import x`` gives ``(x, [])``)."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            assert node.module is not None
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def _run_modules() -> list[str]:
    """``host.cli._run`` and every sibling module it reaches, the seam excluded."""
    seen: list[str] = []
    pending = ["host.cli._run"]
    while pending:
        module = pending.pop()
        if module in seen or module == SEAM:
            continue
        seen.append(module)
        pending += [name for name, _ in _imports(_path_of(module)) if name.startswith("host.cli.")]
    return sorted(seen)


def _path_of(module: str) -> Path:
    return CLI / (module.rsplit(".", 1)[1] + ".py")


def _allowed(module: str) -> bool:
    root = module.split(".", 1)[0]
    return (
        module == "host"
        or module.startswith("host.cli.")
        or root == "anyio"
        or root == "__future__"
        or root in sys.stdlib_module_names
    )


def test_the_run_modules_import_only_the_public_host_package() -> None:
    modules = _run_modules()
    # The modules that run a task (a sanity check that the walk follows the sibling imports).
    assert {"host.cli._run", "host.cli._hints", "host.cli._live", "host.cli._output", "host.cli._select"} <= set(
        modules
    )
    assert "host.cli._status" in modules
    offending = [
        f"{module}: {imported}"
        for module in modules
        for imported, _ in _imports(_path_of(module))
        if not _allowed(imported)
    ]
    assert offending == []


def test_the_seam_to_host_internals_stays_exactly_the_pinned_names() -> None:
    imports = {module: set(names) for module, names in _imports(_path_of(SEAM)) if module != "__future__"}
    assert imports == SEAM_IMPORTS
