"""API keys never reach the store, results, details, logs, progress or error messages."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import anyio
import pytest
from aiohttp import web

from harness.client import ModelClient
from harness.errors import ModelCallError
from harness.records import ModelSpec
from harness.retry import RetryPolicy
from harness.testing import FakeOpenAI, Fault
from harness.urls import MASK, redact_text

from .helpers import JUDGE_MODEL, model_and_judge, write_arith, write_config, write_judge_config
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


@pytest.mark.parametrize("name", ["accessToken", "subscriptionKey", "apiToken", "authToken",
                                  "clientSecret", "sessionToken", "APIKey", "xApiKey"])
def test_a_camel_case_secret_parameter_is_masked(name):
    from harness.urls import redact_url, url_secrets

    url = f"http://h/v1?api-version=1&{name}=s3cr3t-planted&keyword=foo"
    assert redact_url(url) == f"http://h/v1?api-version=1&{name}=***&keyword=foo"
    assert "s3cr3t-planted" in url_secrets(url)


def test_a_key_quoted_escaped_or_percent_encoded_is_masked():
    # A server echoing the key inside JSON escapes its slashes; inside HTML or a URL it
    # percent-encodes them: the text must not hold the key in any of those forms.
    key = "sk-AbC/def+ghi=jkl123"
    assert redact_text('{"error": "bad key sk-AbC\\/def+ghi=jkl123"}', "http://h/v1", key) \
        == '{"error": "bad key ***"}'
    assert redact_text("<p>key=sk-AbC%2Fdef%2Bghi%3Djkl123</p>", "http://h/v1", key) \
        == "<p>key=***</p>"


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


# Secrets echoed by a server and then shortened (red team F6) -----------------------------
#
# Error texts are shortened (the first line, cut at 120 or 300 characters; a plain error
# body at 500) and rewritten (digit runs read ``…``): a secret masked only after that is
# no longer found whole, and part of it shows. So the whole raw text is masked first.

def _b64(seed: str, length: int) -> str:
    """``length`` characters of a token-like (base64url) text, the same every run."""
    text, block = "", seed.encode()
    while len(text) < length:
        block = hashlib.sha512(block).digest()
        text += base64.urlsafe_b64encode(block).decode().rstrip("=")
    return text[:length]


#: A key with a digit run, which ``…`` would replace in a failure's cause.
DIGIT_RUN_KEY = "sk-acme-20240611-Hunter2Secret"
#: An OpenAI project key: 164 characters, longer than a cause's 120.
LONG_KEY = "sk-proj-" + _b64("long", 156)
#: A bearer token longer than the 500 characters kept of a plain-text error body.
JWT_LIKE = "eyJhbGciOiJSUzI1NiJ9." + _b64("jwt", 600)
#: A secret in the base URL's query, as written (the server echoes it decoded too).
QUERY_SECRET = "QSECRET%2Bsig%3Dabc777"


@dataclass(frozen=True)
class Echo:
    """A case: the key sent, a query on the base URL, where the echo starts in the error
    message (JSON) or body (``plain``), and the secrets no piece of may be seen."""

    key: str
    query: str = ""
    at: int = 0
    plain: bool = False

    @property
    def secrets(self) -> tuple[str, ...]:
        query = self.query.partition("=")[2]
        return (self.key, *((query, unquote(query)) if query else ()))


ECHOES = {
    "digit-run-key": Echo(DIGIT_RUN_KEY),
    "164-char-key": Echo(LONG_KEY),
    "query-secret": Echo("sk-query-case-0001", query=f"?api-key={QUERY_SECRET}"),
    # at character 301 of the body (its JSON wrapper adds 21), 290 of the error text
    # (after ``HTTP 500: ``): it straddles the 300 characters an error's message keeps.
    "key-past-300": Echo(DIGIT_RUN_KEY, at=280),
    # a plain-text body, of which 500 characters are kept: the token is cut in two.
    "plain-body-cut-key": Echo(JWT_LIKE, at=100, plain=True),
}


class EchoingProxy(FakeOpenAI):
    """The fake server behind a proxy that answers any request carrying ``echo.key`` with
    a 500 quoting what it was sent: the bearer token and the query (as sent and decoded),
    starting at character ``echo.at`` of the error message (or of a plain-text body).
    Requests with another key are served as usual (the model, when the judge echoes)."""

    def __init__(self, echo: Echo, **kw) -> None:
        super().__init__(**kw)
        self.echo = echo
        self.echoed = 0

    def _echoed(self, request: web.Request) -> web.Response | None:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token != self.echo.key:
            return None
        self.echoed += 1
        text = ("upstream rejected the credentials ".ljust(self.echo.at, ".") + token
                + f" for query {request.rel_url.raw_query_string!r}"
                + f" ({request.query_string!r}) at 2024-06-11T10:00:00 id 7f3a9c01d2e4")
        if self.echo.plain:
            return web.Response(status=500, text=text)
        return self._error("server_error", message=text)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        reply = self._echoed(request)
        return reply if reply is not None else await super()._answer(request)

    async def _list_models(self, request: web.Request) -> web.Response:
        reply = self._echoed(request)
        return reply if reply is not None else await super()._list_models(request)


def pieces(secret: str) -> set[str]:
    """Every 8-character piece of ``secret``: none of them may be seen."""
    return {secret[i:i + 8] for i in range(max(1, len(secret) - 7))}


def assert_no_piece(secrets: tuple[str, ...], *texts: str | bytes, where: str = "") -> None:
    for secret in secrets:
        for piece in pieces(secret):
            for text in texts:
                data = text.encode() if isinstance(text, str) else text
                assert piece.encode() not in data, (where, piece, secret)


def assert_no_piece_in_files(secrets: tuple[str, ...], work: Path) -> None:
    for path in work.rglob("*"):
        if path.is_file():
            assert_no_piece(secrets, path.read_bytes(), where=str(path))


@pytest.mark.parametrize("role", ["model", "judge"])
@pytest.mark.parametrize("transport", ["aiohttp", "openai"])
@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
async def test_an_echoed_secret_is_masked_whole_in_every_error_text(echo, transport, role):
    """The client's errors (message, cause), the cause its breaker keeps and the error
    it gives: no piece of the key or of the URL's secret, however the text was cut."""
    if echo.query and transport == "openai":
        pytest.skip("the SDK puts a base URL's query before the path: a 404, no echo")
    async with EchoingProxy(echo) as srv:
        spec = ModelSpec(abbr="m", model="fake-model", base_url=srv.base_url + echo.query,
                         api_key=echo.key, transport=transport)
        client = ModelClient(spec, role=role,
                             policy=RetryPolicy(max_attempts=2, initial=0.01, maximum=0.02))
        try:
            with pytest.raises(ModelCallError) as completing:
                await client.complete([{"role": "user", "content": "hi"}], {"max_tokens": 8})
            with pytest.raises(ModelCallError) as listing:
                await client.list_models()
        finally:
            await client.aclose()
    assert srv.echoed == 4  # two attempts each: the server did quote the secrets
    down = client.breaker.error()
    texts = [str(completing.value), completing.value.cause, completing.value.outcome,
             str(listing.value), listing.value.cause, str(down), down.cause]
    assert completing.value.kind == "server_error"
    assert_no_piece(echo.secrets, *texts, where=f"{role} error texts")
    # What the server quoted is in the texts, masked (a cause keeps only the body's
    # start; the SDK wraps the body in its own words, or drops a plain-text one).
    if transport == "aiohttp":
        assert "***" in str(completing.value)
        if echo.at == 0:
            assert "***" in completing.value.cause and "***" in down.cause


async def _run(tmp_path: Path, echo: Echo, role: str) -> tuple[Path, bytes, bytes]:
    data = write_arith(tmp_path / "a.jsonl", 3)
    async with EchoingProxy(echo, responder=model_and_judge,
                            models=("fake-model", JUDGE_MODEL)) as srv:
        if role == "model":
            cfg = write_config(tmp_path / "cfg.py", data)
            flags = ["--model-base-url", srv.base_url + echo.query, "--model", "fake-model",
                     "--api-key-env", "K"]
        else:
            cfg = write_judge_config(tmp_path / "cfg.py", data, srv.base_url, mode="judge",
                                     judge={"key": echo.key},
                                     judge_url=srv.base_url + echo.query)
            flags = []
        result = await anyio.run_process(
            cli("run", str(cfg), "-w", str(tmp_path / "w"), "--max-attempts", "2", *flags),
            env=env(K=echo.key), check=False)
    assert srv.echoed > 0
    assert result.returncode == 1, result.stderr.decode()
    (tmp_path / "cfg.py").unlink()  # the user's config holds the judge key and URL
    return tmp_path / "w", result.stdout, result.stderr


@pytest.mark.parametrize("role", ["model", "judge"])
@pytest.mark.parametrize("echo", ECHOES.values(), ids=ECHOES.keys())
async def test_an_echoed_secret_reaches_no_output_in_part(tmp_path, echo, role):
    """A run whose calls all fail with the secrets quoted: the errors are written, masked,
    and no piece of a secret is in the results, summary, details, store or streams."""
    work, stdout, stderr = await _run(tmp_path, echo, role)
    abbr = "fake" if role == "judge" else "fake-model"
    details = work / "details" / abbr / "arith.jsonl"
    for path in (details, work / "results" / abbr / "arith.json", work / "summary.json",
                 work / "harness.db"):
        assert path.is_file(), sorted(work.rglob("*"))
        assert_no_piece(echo.secrets, path.read_bytes(), where=str(path))
    assert_no_piece_in_files(echo.secrets, work)  # and anything else written there
    assert_no_piece(echo.secrets, stdout, stderr, where="streams")
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    errors = [str(r.get("error") or "") + str(r.get("cause") or "") for r in rows]
    assert any("***" in e for e in errors), rows  # the quoted secrets were written, masked


def test_a_secret_is_masked_whole_or_where_a_cut_text_ends_inside_it():
    """``redact_text`` masks a whole secret anywhere, and a start of one (8 characters or
    more) that ends the text: what is left of it in a text cut short before masking."""
    url = f"http://h/v1?api-key={QUERY_SECRET}"
    key = DIGIT_RUN_KEY
    assert redact_text(f"a {key} b {key}", url, key) == f"a {MASK} b {MASK}"
    assert redact_text("q=QSECRET+sig=abc777 and QSECRET%2Bsig%3Dabc777", url) \
        == f"q={MASK} and {MASK}"
    assert redact_text("Bearer sk-acme-2024", url, key) == f"Bearer {MASK}"
    assert redact_text("cut: QSECRET%2B", url, key) == f"cut: {MASK}"
    # a few characters are no secret's piece (often a word of their own); a start of a
    # secret mid-text is other text
    assert redact_text("Bearer sk-", url, key) == "Bearer sk-"
    assert redact_text("HTTP 401: Invalid token", url, "token-abc123") \
        == "HTTP 401: Invalid token"
    assert redact_text("sk-acme-2024 is a prefix", url, key) == "sk-acme-2024 is a prefix"
    assert redact_text("nothing here", url, key) == "nothing here"
