"""The package builds a wheel (setuptools, offline, as Debian ships it) that works installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)


def test_the_package_builds_a_wheel_that_imports_installed(tmp_path):
    if run(sys.executable, "-m", "pip", "--version").returncode != 0:
        pytest.skip("pip is not installed (Debian: python3-pip)")
    # A copy: setuptools builds in the source tree, which other tests are reading.
    source = tmp_path / "source"
    shutil.copytree(PACKAGE, source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                "--no-index", str(source), "-w", str(tmp_path / "dist"))
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list((tmp_path / "dist").glob("tenure-*-py3-none-any.whl"))
    assert len(wheels) == 1, built.stdout

    site = tmp_path / "site"
    installed = run(sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--target", str(site), str(wheels[0]))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    # Run away from the tree so that only the installed copy can be found.
    probe = ("import tenure, tenure.aio; "
             "print(tenure.__file__, tenure.__version__, tenure.to_ms('1.5s'))")
    env = dict(os.environ, PYTHONPATH=str(site))
    imported = run(sys.executable, "-c", probe, cwd=tmp_path, env=env)
    assert imported.returncode == 0, imported.stderr
    where, version, ms = imported.stdout.split()
    assert Path(where).is_relative_to(site)
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    assert version == project["version"] and ms == "1500"
