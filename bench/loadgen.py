"""Benchmark of the load generator (a benchmark, not a test):
`python bench/loadgen.py [--rate 1000] [--seconds 10] [--runs 1]`.

A null aiohttp server (its own process, loopback, answers 200 "ok" at once) takes an open-loop
constant rate from `arenac.loadgen.run_load` (substrate `plain`, one route). Prints, per run:
- the achieved rate: requests actually started per second over the span from the first start to
  the last (target: within 1 % of the target rate), and how many completed without error;
- the latency the ledger records against the null server, from each request's *scheduled* start
  (p50 / p99 / p99.9 / max): with a server that does nothing this is the generator's own overhead
  plus one loopback round trip; and how late the generator itself started requests (p99, max).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arenac.loadgen import load_ledger, run_load
from arenac.loadgen.ledger import new_histogram
from arenac.model.library import LoadProfile, Phase

NULL_SERVER = """
import asyncio
from aiohttp import web

async def ok(request):
    return web.Response(text="ok")

async def main():
    app = web.Application()
    app.router.add_get("/{name}", ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def one_run(target: str, rate: float, seconds: float, out: Path) -> None:
    profile = LoadProfile(name="null", warmup=None, phases=(Phase(name="steady", duration_s=seconds, rate=rate),),
                          mix={"null": 1.0})
    summary = run_load(profile, target, 1.0, seconds, out, substrate="plain")
    ledger = load_ledger(out)
    merged = new_histogram()
    for entry in ledger["seconds"]:
        merged.add(entry["hist"])
    count = sum(entry["count"] for entry in ledger["seconds"])
    errors = sum(entry["errors"] for entry in ledger["seconds"])
    achieved = (count - 1) / summary.started_span_s if summary.started_span_s > 0 else 0.0
    deviation = (achieved - rate) / rate * 100
    ms = [merged.get_value_at_percentile(p) / 1000 for p in (50, 99, 99.9)] + [merged.get_max_value() / 1000]
    print(f"target {rate:.0f}/s for {seconds:.0f} s: {count} requests ({errors} errors), "
          f"achieved {achieved:.1f}/s ({deviation:+.2f} %, target within 1 %)")
    print(f"  latency vs the null server from the scheduled start: p50 {ms[0]:.2f} ms, p99 {ms[1]:.2f} ms, "
          f"p99.9 {ms[2]:.2f} ms, max {ms[3]:.2f} ms")
    print(f"  start lag of the generator: p99 {summary.p99_start_lag_s * 1000:.2f} ms, "
          f"max {summary.max_start_lag_s * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-c", NULL_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        target = f"http://127.0.0.1:{port}"
        with tempfile.TemporaryDirectory(prefix="bench-loadgen-") as tmp:
            for index in range(args.runs):
                started = time.perf_counter()
                one_run(target, args.rate, args.seconds, Path(tmp) / f"ledger{index}.json")
                print(f"  wall time {time.perf_counter() - started:.1f} s")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
