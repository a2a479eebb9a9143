"""API keys never reach the store, results, details, logs, progress or error messages."""

from __future__ import annotations

import socket
import sqlite3

import anyio
import pytest
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
    # Stored outcomes are among what is grepped (their keys hash the judge's settings).
    con = sqlite3.connect(tmp_path / "w/harness.db")
    assert con.execute("SELECT count(*) FROM outcomes").fetchone()[0] > 0
    con.close()
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


# Credentials in an endpoint URL (issue 13, red team B7) ----------------------------------

URL_PASSWORD = "pw-planted-in-url-5d1e"
URL_QUERY_KEY = "qk-planted-in-url-c0a7"


def test_redact_url_masks_credentials_and_leaves_plain_urls_alone():
    from harness.urls import redact_url

    plain = "https://api.example.com:8443/v1?api-version=2024-06-01"
    assert redact_url(plain) == plain
    assert redact_url("http://user:s3cret@h/v1") == "http://user:***@h/v1"
    assert redact_url("https://tok3n@h/v1") == "https://***@h/v1"
    masked = redact_url("http://h/v1?api-version=1&api-key=K1&Access_Token=K2&sig=K3&x=K4")
    assert masked == "http://h/v1?api-version=1&api-key=***&Access_Token=***&sig=***&x=K4"
    assert redact_url(masked) == masked


def _judge_env_only(cfg):
    import re

    cfg.write_text(re.sub(r"judge_cfg=\{[^}]*\}", "judge_cfg=dict()", cfg.read_text()))
    return cfg


# (where the URL goes: config writer(tmp, data, url with password) → (cfg, flags, env))
USERINFO_SOURCES = {
    "flag": lambda cfg, data, url: (write_judge_config(cfg, data, "http://127.0.0.1:9/v1"),
                                    ["--model-base-url", url, "--model", "m"], {},
                                    "field '--model-base-url'"),
    "model": lambda cfg, data, url: (write_judge_config(cfg, data, url,
                                                        judge_url="http://127.0.0.1:9/v1"),
                                     [], {}, "field 'models[0].openai_api_base'"),
    "judge": lambda cfg, data, url: (write_judge_config(cfg, data, "http://127.0.0.1:9/v1",
                                                        judge_url=url),
                                     [], {}, "judge_cfg.openai_api_base'"),
    "judge-environment": lambda cfg, data, url: (
        _judge_env_only(write_judge_config(cfg, data, "http://127.0.0.1:9/v1")), [],
        {"OC_JUDGE_API_BASE": url, "OC_JUDGE_MODEL": "judge-model"},
        "field '$OC_JUDGE_API_BASE'"),
}


@pytest.mark.parametrize("source", USERINFO_SOURCES.values(), ids=USERINFO_SOURCES.keys())
async def test_a_password_in_an_endpoint_url_exits_2_masked_before_any_request(tmp_path,
                                                                               source):
    async with FakeOpenAI(responder=model_and_judge) as srv:
        url = srv.base_url.replace("http://", f"http://user:{URL_PASSWORD}@")
        cfg, flags, environ, field = source(tmp_path / "cfg.py",
                                            write_arith(tmp_path / "a.jsonl", 3), url)
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "-q", *flags),
            env=env(**environ), check=False)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert field in err and "user:***@127.0.0.1" in err and "--api-key-env" in err, err
    assert "Traceback" not in err
    assert srv.stats.total == 0
    assert URL_PASSWORD.encode() not in result.stdout + result.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.name != "cfg.py":
            assert URL_PASSWORD.encode() not in path.read_bytes(), path


async def test_a_key_in_the_url_query_reaches_no_output(tmp_path):
    """Model and judge behind ``?api-key=…``: the calls work (the query goes after the
    path), and the key is in no file, stream or error; nor is a ``?token=`` of a dead
    endpoint, whose failures are written as errors."""
    data = write_arith(tmp_path / "a.jsonl", 12)

    def faults(body, attempt):
        if body["model"] == "fake-model" and "What is 7 " in str(body):
            return Fault("bad_request")  # an error row in the details and the store
        return None

    async with FakeOpenAI(responder=model_and_judge, faults=faults) as srv:
        url = f"{srv.base_url}?api-version=1&api-key={URL_QUERY_KEY}"
        cfg = write_judge_config(tmp_path / "cfg.py", data, url, mode="parallel")
        first = await anyio.run_process(cli("run", str(cfg), "-w", str(tmp_path / "w")),
                                        env=env(), check=False)
    assert first.returncode == 1, first.stderr.decode()  # only the bad-request sample
    assert "HTTP 400" in (tmp_path / "w/details/fake/arith.jsonl").read_text()
    assert b"api-key=***" in (tmp_path / "w/harness.db").read_bytes()  # the model's record
    dead = f"http://127.0.0.1:{_free_port()}/v1?token={URL_QUERY_KEY}"
    second = await anyio.run_process(
        cli("run", str(cfg), "-w", str(tmp_path / "w2"), "-q", "--model-base-url", dead,
            "--model", "m", "--max-attempts", "1"), env=env(), check=False)
    assert second.returncode == 1, second.stderr.decode() + second.stdout.decode()
    assert "model_error" in (tmp_path / "w2/details/fake/arith.jsonl").read_text()
    (tmp_path / "cfg.py").unlink()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert URL_QUERY_KEY.encode() not in path.read_bytes(), path
    for stream in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert URL_QUERY_KEY.encode() not in stream
