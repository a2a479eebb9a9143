"""The built wheel, installed alone into a fresh venv, works from any directory.

What a ``pip install harness-*.whl`` user gets: the shipped configs with their data
files and the judge templates (package data, not files beside a checkout), every
third-party import declared, no pip warning about the declared extras. Building needs
the build backend from PyPI; without it the test is skipped, except in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(900)]


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh venv holding only the wheel and its declared dependencies."""
    tmp = tmp_path_factory.mktemp("wheel")
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT),
                  "-w", str(tmp / "dist")])
    if built.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail(f"building the wheel failed:\n{built.stderr}")
        pytest.skip(f"cannot build the wheel here: {built.stderr.strip()[-300:]}")
    (wheel,) = (tmp / "dist").glob("harness-*.whl")
    venv.create(tmp / "venv", with_pip=True)
    python = tmp / "venv" / "bin" / "python"
    done = _run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)])
    assert done.returncode == 0, done.stderr
    assert "does not provide the extra" not in done.stderr
    return python


def _start_fake_server(python: Path, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([str(python), "-m", "harness.testing.fake_openai", "--port", "0",
                               "--reply", "A"], cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    line = server.stderr.readline()  # "fake-openai listening on URL", once the port is bound
    if not line.startswith("fake-openai listening on "):
        server.kill()
        pytest.fail(f"fake server did not start: {line}{server.communicate()[1]}")
    return server, line.split()[-1]


def test_wheel_runs_shipped_configs_from_an_empty_directory(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HARNESS_JUDGES_DIR")}
    server, url = _start_fake_server(installed, tmp_path)
    try:
        # The model says 'A': no number, so GSM8K scores it wrong, the cascade's rules
        # fail it and the judge (same server, the shipped 'grader' template) says A.
        gsm8k = _run([str(installed), "-m", "harness", "run", "gsm8k", "--limit", "5",
                      "--model-base-url", url, "-w", "out", "-q"], cwd=tmp_path, env=env)
        assert gsm8k.returncode == 0, gsm8k.stderr
        cascade = _run([str(installed), "-m", "harness", "run", "math500_cascade", "--limit",
                        "3", "--model-base-url", url, "-w", "out", "-q"], cwd=tmp_path,
                       env={**env, "OC_JUDGE_API_BASE": url, "OC_JUDGE_MODEL": "fake-model"})
        assert cascade.returncode == 0, cascade.stderr
        listing = _run([str(installed), "-m", "harness", "list"], cwd=tmp_path, env=env)
    finally:
        server.terminate()
        server.communicate(timeout=30)

    results = tmp_path / "out" / "results" / "fake-model"
    plain = json.loads((results / "gsm8k.json").read_text())
    assert (plain["total"], plain["scored"], plain["correct"]) == (5, 5, 0)
    judged = json.loads((results / "math500-cascade.json").read_text())["cascade_stats"]
    assert (judged["llm_evaluated"], judged["llm_correct"]) == (3, 3)
    # The shipped configs are listed, not the modules of whatever sits beside site-packages.
    assert listing.returncode == 0, listing.stderr
    datasets = listing.stdout.split("\n\n")[0].splitlines()[1:]
    assert sorted(line.split()[0] for line in datasets) == sorted(
        p.stem for p in (ROOT / "datasets").glob("*.py") if not p.name.startswith("_"))
    judges = listing.stdout.split("judge templates")[1].splitlines()[1:]
    assert sorted(line.split()[0] for line in judges if line.strip()) == sorted(
        p.stem for p in (ROOT / "judges").glob("*.txt"))
