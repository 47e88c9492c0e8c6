"""Shared fixtures of the frontend tests: a private compile cache, the
examples directory and a runner for the example scripts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Compiles here and in the example scripts verify the lowered nc kernel too
# (trn-cc skips it by default: docs/cli.md, "Environment").
os.environ.setdefault("TRN_VERIFY_IR", "1")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: The interpreter running the tests: the project's environment (.venv).
PYTHON = sys.executable


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("trn-cache"))


def run_example(script: str, *args: str, env: dict = None, check: bool = True
                ) -> subprocess.CompletedProcess:
    """Runs examples/<script> with the tests' Python; returns the process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([PYTHON, str(EXAMPLES / script), *args], env=full_env,
                          capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"{script} {' '.join(args)} exited {proc.returncode}:\n"
                             f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


def losses(path: Path) -> list:
    return json.loads(Path(path).read_text())["losses"]
