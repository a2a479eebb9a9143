"""Shared fixtures: the in-process fake OpenAI server and arithmetic datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.testing import FakeOpenAI

from .helpers import arith_reply, write_arith


@pytest.fixture
async def server():
    """A fake OpenAI server answering arithmetic questions (every 4th wrong)."""
    async with FakeOpenAI(responder=arith_reply) as srv:
        yield srv


@pytest.fixture
def arith(tmp_path: Path) -> Path:
    """A 40-row arithmetic dataset."""
    return write_arith(tmp_path / "arith.jsonl", 40)
