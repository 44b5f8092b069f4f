"""Shared helpers for the config tests: write a TOML document and load it through the real loader."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from host.config import HostConfig, load_config


def load_toml(tmp_path: Path, text: str, *, environ: Mapping[str, str] | None = None) -> HostConfig:
    """Write ``text`` to ``tmp_path/config.toml`` and load it explicitly, with ``tmp_path`` as the working dir."""
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, cwd=str(tmp_path), environ={} if environ is None else environ)
