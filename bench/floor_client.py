"""The floor: a minimal aiohttp client that only sends N chat requests, C at a time.

No extraction, no scoring, no storage: the least any harness must do. Its wall time next
to N × latency / C shows what this machine allows.

    python bench/floor_client.py --url http://127.0.0.1:8000/v1 -n 2000 -c 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp


async def main(url: str, n: int, c: int) -> None:
    """Send ``n`` requests with ``c`` workers pulling from a shared counter."""
    counter = iter(range(n))
    connector = aiohttp.TCPConnector(limit=c)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def worker() -> None:
            for i in counter:
                body = {"model": "fake-model", "max_tokens": 32,
                        "messages": [{"role": "user", "content": f"What is {i} + {i + 1}?"}]}
                async with session.post(f"{url}/chat/completions", json=body) as resp:
                    data = await resp.json()
                    assert data["choices"][0]["message"]["content"] is not None

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(c)))
        print(json.dumps({"wall": time.perf_counter() - start}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("-n", type=int, default=2000)
    parser.add_argument("-c", type=int, default=64)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.n, args.c))
