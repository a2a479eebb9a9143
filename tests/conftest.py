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


#: Seconds a test of the real embedded model may take: it decodes at tens of tokens a
#: second on two cores, several times slower when the cores are shared.
LOCAL_MODEL_TIMEOUT = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of the embedded model get ``LOCAL_MODEL_TIMEOUT`` unless they set their own."""
    for item in items:
        if item.get_closest_marker("local_model") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(LOCAL_MODEL_TIMEOUT))
