"""The version is stated once (the workspace ``Cargo.toml``) and the Python package shows
the same: ``ddx.__version__``, the installed distribution's metadata, and the writer
recorded in a saved equation. (``ddx --version`` and ``ddx::VERSION``: the Rust test
``crates/ddx-cli/tests/version.rs``.)"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import ddx

ROOT = Path(__file__).resolve().parents[3]


def stated() -> str:
    with open(ROOT / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


def test_version_agrees():
    version = stated()
    assert ddx.__version__ == version
    assert importlib.metadata.version("ddx-ad") == version
    assert f"ddx {version}".encode() in ddx.equation("x * y").to_bytes()
    major, minor, patch = (int(p) for p in version.split("."))
    assert ddx.version_info == (major, minor, patch)
