"""API keys never reach the store, results, details, logs, progress or error messages."""

from __future__ import annotations

import socket

import anyio
from aiohttp import web

from harness.testing import FakeOpenAI, Fault

from .helpers import model_and_judge, write_arith, write_judge_config
from .test_cli import cli, env

MODEL_KEY = "sk-planted-model-key-7f3a9c"
JUDGE_KEY = "sk-planted-judge-key-91be44"


def assert_nowhere(work, *streams: bytes) -> None:
    for key in (MODEL_KEY, JUDGE_KEY):
        for stream in streams:
            assert key.encode() not in stream
        for path in work.rglob("*"):
            if path.is_file():
                assert key.encode() not in path.read_bytes(), path


async def test_planted_keys_appear_in_no_output(tmp_path):
    data = write_arith(tmp_path / "a.jsonl", 30)

    def faults(body, attempt):
        # Some model calls fail for good, so error messages are written too.
        if body["model"] == "fake-model" and "What is 7 " in str(body):
            return Fault("bad_request")
        return Fault("server_error") if attempt == 0 and "What is 3 " in str(body) else None

    async with FakeOpenAI(responder=model_and_judge, faults=faults) as srv:
        cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="parallel",
                                 judge={"key": JUDGE_KEY})
        text = cfg.read_text().replace("key='sk-model-not-a-secret'", "api_key_env='MODEL_KEY'")
        cfg.write_text(text)
        result = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w")),
                                         env=env(MODEL_KEY=MODEL_KEY), check=False)
    assert result.returncode == 1  # the bad-request sample failed, and says so
    assert b"HTTP 400" in (tmp_path / "w/details/fake/arith.jsonl").read_bytes()
    # The config file itself holds the judge key (the user put it there); outputs do not.
    (tmp_path / "cfg.py").unlink()
    assert_nowhere(tmp_path, result.stdout, result.stderr)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_key_echoed_by_the_server_is_redacted_from_errors(tmp_path):
    """A proxy that echoes the Authorization header in its error body."""

    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": f"bad auth {request.headers['Authorization']}",
                                            "type": "invalid_request_error"}}, status=400)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", echo)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        data = write_arith(tmp_path / "a.jsonl", 2)
        from .helpers import write_config
        cfg = write_config(tmp_path / "cfg.py", data)
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", "--model-base-url",
                f"http://127.0.0.1:{port}/v1", "--model", "m", "--api-key-env", "K"),
            env=env(K=MODEL_KEY), check=False)
    finally:
        await runner.cleanup()
    assert result.returncode == 1
    assert b"***" in (tmp_path / "w/details/m/arith.jsonl").read_bytes()
    (tmp_path / "cfg.py").unlink()
    assert_nowhere(tmp_path, result.stdout, result.stderr)
