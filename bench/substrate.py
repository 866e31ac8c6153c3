"""Benchmark of the spine substrate (a benchmark, not a test): `python bench/substrate.py [--seconds N]`.

Prints:
- up-to-ready time of the whole stack: on a fresh directory (initdb + schema + seed included) and
  on an existing one (a restart of the stack), target <= 3 s; and the same as a user sees it: the
  `arenac substrate up spine` command in a new process, from launch until its ready file exists;
- healthy send throughput and latency: closed loop, C concurrent clients each sending to a random
  channel through the gateway, for N seconds, at several concurrencies;
- memory of the stack while idle and right after the send load, summed over every process
  (PostgreSQL backends included): RSS (counts shared memory once per process, so it overstates),
  PSS (shared memory split between its users: the honest total) and USS (unique to each process).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import psutil

from arenac.substrate.spine.seed import CHANNELS
from arenac.substrate.spine.stack import SpineStack


def stack_memory(stack: SpineStack) -> str:
    """RSS, PSS and USS in MiB, summed over the stack's processes and their children (PG backends)."""
    rss = pss = uss = count = 0
    for pid in stack.pids().values():
        try:
            root = psutil.Process(pid)
            for proc in (root, *root.children(recursive=True)):
                info = proc.memory_full_info()
                rss, pss, uss, count = rss + info.rss, pss + info.pss, uss + info.uss, count + 1
        except psutil.NoSuchProcess:
            continue
    return f"RSS {rss / 2**20:.0f} MiB, PSS {pss / 2**20:.0f} MiB, USS {uss / 2**20:.0f} MiB over {count} processes"


async def send_load(gateway: str, concurrency: int, seconds: float) -> tuple[int, int, list[float]]:
    """Closed loop: each client sends, waits for the answer, sends again. Returns (ok, errors, latencies)."""
    latencies: list[float] = []
    ok = errors = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        async with session.post(f"{gateway}/api/login", json={"user": "ada"}) as response:
            token = (await response.json())["token"]
        headers = {"Authorization": f"Bearer {token}"}
        deadline = time.perf_counter() + seconds
        rng = random.Random(7)

        async def client() -> None:
            nonlocal ok, errors
            while time.perf_counter() < deadline:
                channel = rng.choice(CHANNELS)[0]
                started = time.perf_counter()
                async with session.post(f"{gateway}/api/channels/{channel}/messages",
                                        json={"text": "bench"}, headers=headers) as response:
                    await response.read()
                latencies.append(time.perf_counter() - started)
                if response.status == 201:
                    ok += 1
                else:
                    errors += 1

        await asyncio.gather(*(client() for _ in range(concurrency)))
    return ok, errors, latencies


def p(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))] * 1000 if ordered else 0.0


def command_up_to_ready(tmp: Path, timeout: float = 30.0) -> float:
    """Seconds from launching `arenac substrate up spine` on a fresh directory until its ready
    file exists; the command is then stopped with SIGTERM, as a user's Ctrl-C would."""
    ready = tmp / "ready.json"
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "arenac.cli", "substrate", "up", "spine", "--dir",
                                str(tmp / "command"), "--ready-file", str(ready)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not ready.exists():
            if process.poll() is not None or time.perf_counter() - started > timeout:
                raise SystemExit(f"arenac substrate up did not get ready (exit {process.poll()})")
            time.sleep(0.01)
        return time.perf_counter() - started
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each send measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="spine-bench-") as tmp:
        command = command_up_to_ready(Path(tmp))
        print(f"arenac substrate up spine, new process, fresh directory, to ready file: {command:.2f} s "
              "(target <= 3 s)")
        stack = SpineStack(Path(tmp) / "stack")
        started = time.perf_counter()
        stack.start()
        fresh = time.perf_counter() - started
        stack.stop()
        started = time.perf_counter()
        endpoints = stack.start()
        warm = time.perf_counter() - started
        try:
            print(f"up to ready: fresh directory {fresh:.2f} s, existing directory {warm:.2f} s (target <= 3 s)")
            time.sleep(2)
            print(f"memory idle: {stack_memory(stack)}")
            for concurrency in args.concurrency:
                ok, errors, latencies = asyncio.run(send_load(endpoints.gateway, concurrency, args.seconds))
                print(f"send, {concurrency:3d} concurrent clients: {ok / args.seconds:7.1f} sends/s, "
                      f"errors {errors}, p50 {p(latencies, 50):6.1f} ms, p99 {p(latencies, 99):6.1f} ms")
            print(f"memory after load: {stack_memory(stack)}")
        finally:
            stack.stop()


if __name__ == "__main__":
    main()
