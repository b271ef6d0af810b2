"""The service's resident memory, idle, before and after a spike of hostile pages: what
``pulpie-rt serve`` gives back once the spike is over (``fix_heap_thresholds``,
``release_free_heap``).

The spike is the idle-memory test's load (``tests/test_serve_faults.py`` posts it from here):
three big hostile pages of ``bench.soak`` (60,000 blocks, 20,000-deep nesting, a 1 MB
attribute), each twice at once (6 requests in flight), three times over. Each repeat starts a
fresh service (the embedded model's default profile, ``--workers 1`` as the test's), waits
until it is idle past its release delay (``IDLE_RELEASE_S``), reads its RSS, posts the spike,
waits as long again and reads it again; the peak is the highest RSS sampled during the spike.

    python -m bench.spike --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.soak import IDLE_S, hostile_pages, rss_bytes
from eval.report import format_table, machine_info, write_result

SPIKE_PAGES = ("many-blocks", "deep-nesting", "huge-attribute")
SPIKE_COPIES = 2  # each page this many times at once
SPIKE_ROUNDS = 3
DEFAULT_REPEATS = 3
MIB = 2 ** 20


def spike_bodies() -> list[bytes]:
    """The spike's request bodies, one page each, in the order one round posts them."""
    pages = dict(hostile_pages())
    return [json.dumps({"pages": [{"id": name, "html": pages[name]}]}).encode()
            for name in SPIKE_PAGES for _ in range(SPIKE_COPIES)]


async def post_spike(url: str, rounds: int = SPIKE_ROUNDS) -> list[int]:
    """The spike against the service at ``url``: each round's bodies at once, ``rounds``
    times; the answers' statuses."""
    import httpx

    bodies = spike_bodies()
    statuses: list[int] = []
    async with httpx.AsyncClient(timeout=120) as client:
        for _ in range(rounds):
            answers = await asyncio.gather(*(
                client.post(url + "/v1/extract", content=body,
                            headers={"Content-Type": "application/json"})
                for body in bodies))
            statuses += [answer.status_code for answer in answers]
    return statuses


def one_spike(model: str | None = None) -> dict[str, Any]:
    """A fresh service's idle RSS before and after the spike, and its peak during it."""
    from pulpie_rt.integrations.serve.process import LocalServer
    from pulpie_rt.integrations.serve.service import IDLE_RELEASE_S

    options = [*([model] if model else []), "--workers", "1"]
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-bench-spike-") as tmp, \
            LocalServer(options, Path(tmp) / "serve.log") as server:
        pid = server.process.pid
        time.sleep(IDLE_RELEASE_S + 1)
        before = rss_bytes(pid)
        peak = [before]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                peak.append(rss_bytes(pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            statuses = asyncio.run(post_spike(server.url))
        finally:
            done.set()
            sampler.join()
        time.sleep(IDLE_S)  # idle past the release delay, as the soak's idle readings
        after = rss_bytes(pid)
    return {"idle_before_bytes": before, "peak_bytes": max(peak), "idle_after_bytes": after,
            "statuses": sorted(set(statuses)), "requests": len(statuses)}


def run_spike_bench(repeats: int = DEFAULT_REPEATS, model: str | None = None) -> dict[str, Any]:
    runs = [one_spike(model) for _ in range(repeats)]
    growth = [(r["idle_after_bytes"] - r["idle_before_bytes"]) / MIB for r in runs]
    return {"repeats": repeats, "model": model, "runs": runs,
            "idle_growth_mib_mean": statistics.fmean(growth),
            "idle_growth_mib_max": max(growth)}


def spike_table(report: dict[str, Any]) -> str:
    rows = [(i + 1, f"{r['idle_before_bytes'] / MIB:.0f}", f"{r['peak_bytes'] / MIB:.0f}",
             f"{r['idle_after_bytes'] / MIB:.0f}",
             f"{(r['idle_after_bytes'] - r['idle_before_bytes']) / MIB:+.0f}",
             ",".join(map(str, r["statuses"])))
            for i, r in enumerate(report["runs"])]
    table = format_table(["service", "idle before MiB", "peak MiB", "idle after MiB",
                          "growth MiB", "statuses"], rows)
    return (table + f"\n  (idle growth: mean {report['idle_growth_mib_mean']:+.1f} MiB, most "
            f"{report['idle_growth_mib_max']:+.1f}; the idle-memory test's bound is +32)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spike",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                        help="fresh services, one spike each")
    parser.add_argument("--model", default=None, help="default: the embedded model")
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")
    args = parser.parse_args(argv)
    report = run_spike_bench(args.repeats, args.model)
    print(spike_table(report))
    path = write_result("spike", {"kind": "spike", "machine": machine_info(), "spike": report},
                        args.out)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
