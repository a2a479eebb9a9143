"""Pipeline overhead: harness vs the floor client, on one fake server with latency L.

Starts ``harness.testing.fake_openai`` in its own process, then runs the floor client
and ``python -m harness run`` (extraction, exact-match scoring and SQLite storage on)
against it, each as a child process, and reports wall time against the physical limit
N × L / C, CPU seconds per 1,000 samples and peak RSS. Then runs harness once more on
the same work directory (a rerun: zero requests expected).

    python bench/bench_pipeline.py -n 2000 -c 64 --latency 0.1
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """
from harness import (AccEvaluator, CustomDataset, GenInferencer, RawPromptTemplate,
                     ZeroRetriever, gsm8k_dataset_postprocess, gsm8k_postprocess)
datasets = [dict(
    abbr='bench', type=CustomDataset, path={path!r},
    reader_cfg=dict(input_columns=['question'], output_column='answer'),
    infer_cfg=dict(prompt_template=dict(type=RawPromptTemplate,
                                        messages=[dict(role='user', content='{{question}}')]),
                   retriever=dict(type=ZeroRetriever),
                   inferencer=dict(type=GenInferencer, max_out_len=32)),
    eval_cfg=dict(evaluator=dict(type=AccEvaluator),
                  pred_postprocessor=dict(type=gsm8k_postprocess),
                  dataset_postprocessor=dict(type=gsm8k_dataset_postprocess)))]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(cmd: list[str]) -> dict:
    """Run ``cmd``; wall seconds, CPU seconds and peak RSS (MiB) of that process alone."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    proc.stdout.close(), proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0,):
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{out}\n{err}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mib": usage.ru_maxrss / 1024, "stdout": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("-c", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen([sys.executable, "-m", "harness.testing.fake_openai",
                               "--port", str(port), "--latency", str(args.latency),
                               "--reply", "The answer is 42."],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(port)
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data.jsonl"
            with open(data, "w") as fh:
                for i in range(args.n):
                    fh.write(json.dumps({"question": f"What is {i} + {i + 1}?",
                                         "answer": "#### 42"}) + "\n")
            cfg = Path(tmp) / "bench_cfg.py"
            cfg.write_text(CONFIG.format(path=str(data)))
            floor = measure([sys.executable, "bench/floor_client.py", "--url", url,
                             "-n", str(args.n), "-c", str(args.c)])
            harness_cmd = [sys.executable, "-m", "harness", "run", str(cfg), "-q",
                           "--model-base-url", url, "--model", "fake-model",
                           "-c", str(args.c), "-w", str(Path(tmp) / "work")]
            first = measure(harness_cmd)
            rerun = measure(harness_cmd)
    finally:
        server.terminate()
        stats = server.communicate(timeout=10)[0].decode().strip().splitlines()
    limit = args.n * args.latency / args.c
    rows = [("floor client", floor), ("harness", first), ("harness rerun", rerun)]
    print(f"N={args.n} C={args.c} L={args.latency}s  physical limit {limit:.2f}s  "
          f"server requests: {stats[-1] if stats else '?'}")
    print("| run | wall s | × limit | × floor | CPU s / 1k samples | peak RSS MiB |")
    print("|---|---|---|---|---|---|")
    for name, m in rows:
        print(f"| {name} | {m['wall']:.2f} | {m['wall'] / limit:.2f} | "
              f"{m['wall'] / floor['wall']:.2f} | {1000 * m['cpu'] / args.n:.2f} | "
              f"{m['rss_mib']:.0f} |")


def _wait_for(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("fake server did not start")


if __name__ == "__main__":
    main()
