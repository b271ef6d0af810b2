"""A soak run of ``pulpie-rt serve`` (``make bench``'s last row; not a test): 16 concurrent
callers for 10 minutes mixing good, hostile and oversized requests against one service, then
the requests by status, latency percentiles and the service's memory.

The mix (seeded; each caller draws a case per request):

- ``good``: 1 to 4 real dev pages in one JSON request (fewer when they would pass half the
  payload limit);
- ``hostile``: synthetic pages built to hurt (20,000-deep nesting, 60,000 blocks, NUL bytes,
  a 1 MB attribute, binary bytes sent as ``text/html``, control characters, no tags);
- ``large``: a real page repeated to about 1.5 MB (under the payload limit);
- ``oversized``: a body over the payload limit, sent whole (413), or only announced by its
  ``Content-Length`` on a raw socket that then closes (413 without the body);
- ``bad``: deeply nested JSON, invalid JSON, an unknown content type, an empty body, a
  format nobody knows (400, 415, 422);
- ``stall``: a raw socket that sends half a body and goes away (the service counts 499).

Printed: requests by status (the callers' view and the service's ``requests_total``), p50 and
p99 latency (all answered requests, and the good ones alone), and the service's resident memory
(RSS): after start; **idle after a warm-up** of the same load (``--warm-up`` seconds: allocators
and caches reach their working size; then the callers pause until nothing is in flight and the
service has been idle for ``IDLE_S``); and **idle at the end** (the same pause after the last
request). The growth between the two idle readings must stay within ``--max-growth`` (10%) for
the run to pass: both are taken in the same state, so what grows between them is memory the
service kept, not the pages in flight. Under load RSS moves with the hostile pages in flight
(a 60,000-block page, a 1.5 MB one): it is sampled every ``RSS_EVERY_S`` after the warm-up and
printed beside (range, and the median of the last third of the samples against the first
third's).

    python -m bench.soak                       # 10 minutes
    python -m bench.soak --seconds 150 --warm-up 30
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from eval.pages import bench_pages
from eval.report import format_table, machine_info, write_result
from pulpie_rt.integrations.serve.service import IDLE_RELEASE_S

DEFAULT_SECONDS = 600
DEFAULT_CALLERS = 16
PAYLOAD_LIMIT = 4_000_000
READ_TIMEOUT_S = 5
RSS_EVERY_S = 5  # seconds between samples of the service's RSS after the warm-up
# seconds of quiet before an idle reading of RSS: past the service's own idle delay before it
# hands free heap memory back (IDLE_RELEASE_S), with room for a loaded machine
IDLE_S = IDLE_RELEASE_S + 2.0
# case -> share of requests
MIX = {"good": 0.55, "hostile": 0.15, "large": 0.05, "oversized": 0.10, "bad": 0.10,
       "stall": 0.05}


def hostile_pages() -> list[tuple[str, bytes | str]]:
    """Synthetic pages built to hurt the page flow (name, HTML)."""
    return [
        ("deep-nesting", "<div>" * 20_000 + "deep" + "</div>" * 20_000),
        ("many-blocks", "<html><body>" + "<p>block</p>" * 60_000 + "</body></html>"),
        ("nul-bytes", "<html><body><p>a\x00b\x00c</p>" + "\x00" * 10_000 + "</body></html>"),
        ("huge-attribute", '<html><body><p title="' + "a" * 1_000_000 + '">x</p></body></html>'),
        ("many-attributes", "<html><body><p " + " ".join(f"a{i}" for i in range(150_000))
         + ">x</p></body></html>"),
        ("binary", bytes(range(256)) * 256),
        ("control-characters", "<p>" + "".join(chr(c) for c in range(32)) * 500 + "</p>"),
        ("no-tags", "plain text " * 20_000),
        ("unclosed", "<html><body>" + "<table><tr><td><ul><li><a href='x'>" * 2_000),
    ]


def bad_bodies() -> list[tuple[str, bytes, str]]:
    """Requests the service must refuse (name, body, Content-Type)."""
    return [
        ("nested-json", b"[" * 200_000, "application/json"),
        ("invalid-json", b'{"pages": [', "application/json"),
        ("octet-stream", b"\x00\x01" * 100, "application/octet-stream"),
        ("empty", b"", "application/json"),
        ("bad-format", b'{"pages": [{"html": "<p>x</p>"}], "format": "pdf"}',
         "application/json"),
    ]


def rss_bytes(pid: int) -> int:
    """Resident memory of process ``pid`` and its children (from /proc)."""
    from pulpie_rt.integrations.serve.process import descendants

    total = 0
    for proc in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{proc}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class Soak:
    """The callers' shared state: what to send, what came back."""

    def __init__(self, url: str, port: int, pages: list[dict], seed: int):
        self.url, self.port = url, port
        self.pages = pages
        self.rng = random.Random(seed)
        self.hostile = hostile_pages()
        self.bad = bad_bodies()
        big = max(pages, key=lambda p: len(p["html"]))["html"]
        self.large = (big * (1_500_000 // max(len(big), 1) + 1))[:1_500_000]
        self.statuses: Counter = Counter()
        self.by_case: dict[str, Counter] = {case: Counter() for case in MIX}
        self.latencies: list[float] = []
        self.good_latencies: list[float] = []
        self.page_errors = 0
        self.transport_errors: Counter = Counter()
        self.in_flight = 0

    async def request(self, client, case: str) -> None:
        self.in_flight += 1
        try:
            await self._request(client, case)
        finally:
            self.in_flight -= 1

    def draw(self) -> str:
        return self.rng.choices(list(MIX), weights=list(MIX.values()))[0]

    async def _request(self, client, case: str) -> None:
        import httpx

        rng = self.rng
        started = time.perf_counter()
        if case in ("stall",) or (case == "oversized" and rng.random() < 0.5):
            status = await self._raw(case)
        else:
            if case == "good":
                pages = rng.sample(self.pages, rng.randint(1, 4))
                while sum(len(p["html"]) for p in pages) > PAYLOAD_LIMIT // 2 and len(pages) > 1:
                    pages.pop()  # good requests stay well within the payload limit
                content = json.dumps({"pages": [{"id": p["id"], "html": p["html"]}
                                                for p in pages]}).encode()
                ctype = "application/json"
            elif case == "hostile":
                name, html = rng.choice(self.hostile)
                if isinstance(html, bytes):
                    content, ctype = html, "text/html"
                else:
                    content = json.dumps({"pages": [{"id": name, "html": html}]}).encode()
                    ctype = "application/json"
            elif case == "large":
                content = json.dumps({"pages": [{"id": "large", "html": self.large}]}).encode()
                ctype = "application/json"
            elif case == "oversized":
                content = b'{"pages": [{"html": "' + b"x" * (PAYLOAD_LIMIT + 1) + b'"}]}'
                ctype = "application/json"
            else:
                _, content, ctype = rng.choice(self.bad)
            try:
                response = await client.post(self.url + "/v1/extract", content=content,
                                             headers={"Content-Type": ctype})
            except httpx.TransportError as exc:
                self.transport_errors[type(exc).__name__] += 1
                self.by_case[case]["transport error"] += 1
                return
            status = response.status_code
            if status == 200:
                body = response.json()
                self.page_errors += sum(r["error"] is not None for r in body["results"])
        elapsed = time.perf_counter() - started
        self.statuses[status] += 1
        self.by_case[case][status] += 1
        if case != "stall":
            self.latencies.append(elapsed)
        if case == "good" and status == 200:
            self.good_latencies.append(elapsed)

    async def _raw(self, case: str) -> int | str:
        """A raw socket: an oversized announcement (its answer), or half a body then gone."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            if case == "oversized":
                writer.write(b"POST /v1/extract HTTP/1.1\r\nHost: soak\r\nContent-Type: "
                             b"application/json\r\nContent-Length: 67108864\r\n\r\n")
                await writer.drain()
                line = await asyncio.wait_for(reader.readline(), 30)
                return int(line.split()[1]) if line else "closed"
            writer.write(b"POST /v1/extract HTTP/1.1\r\nHost: soak\r\nContent-Type: "
                         b'application/json\r\nContent-Length: 1000\r\n\r\n{"pages": [')
            await writer.drain()
            await asyncio.sleep(0.5)
            return "client left"
        finally:
            writer.close()

    async def run(self, seconds: float, callers: int, on_warm, warm_up: float,
                  on_sample=lambda: None) -> None:
        """``callers`` callers for ``seconds``; after ``warm_up`` seconds they pause until
        the service is idle, ``on_warm()`` reads it, and they go on."""
        import httpx

        deadline = time.monotonic() + seconds
        warm_at = time.monotonic() + warm_up
        going = asyncio.Event()
        going.set()

        async def caller(client) -> None:
            while time.monotonic() < deadline:
                await going.wait()
                await self.request(client, self.draw())

        async def watch() -> None:
            await asyncio.sleep(max(0.0, warm_at - time.monotonic()))
            going.clear()
            await self.quiet()
            on_warm()
            going.set()
            while time.monotonic() < deadline:  # the trend, not one sample: RSS moves with
                await asyncio.sleep(RSS_EVERY_S)  # the pages in flight
                on_sample()

        limits = httpx.Limits(max_connections=callers, max_keepalive_connections=callers)
        async with httpx.AsyncClient(limits=limits, timeout=300) as client:
            await asyncio.gather(watch(), *(caller(client) for _ in range(callers)))

    async def quiet(self) -> None:
        """Until no request is in flight, then ``IDLE_S`` more (the service idle)."""
        while self.in_flight:
            await asyncio.sleep(0.1)
        await asyncio.sleep(IDLE_S)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def run_soak(seconds: float = DEFAULT_SECONDS, callers: int = DEFAULT_CALLERS,
             warm_up: float | None = None, model: str | None = None, seed: int = 0,
             max_growth: float = 0.10, pages: list[dict] | None = None) -> dict[str, Any]:
    """One soak run (see the module docstring); the report."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    from pulpie_rt.integrations.serve.process import LocalServer

    warm_up = min(60.0, seconds / 5) if warm_up is None else warm_up
    pages = pages if pages is not None else bench_pages(64)
    options = [*([model] if model else []), "--payload-limit", str(PAYLOAD_LIMIT),
               "--request-read-timeout", str(READ_TIMEOUT_S)]
    rss: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="pulpie-rt-soak-") as tmp, \
            LocalServer(options, Path(tmp) / "serve.log") as server:
        pid = server.process.pid
        rss["start"] = rss_bytes(pid)
        soak = Soak(server.url, server.port, pages, seed)
        started = time.monotonic()
        samples: list[int] = []
        asyncio.run(soak.run(seconds, callers, lambda: rss.__setitem__("warm", rss_bytes(pid)),
                             warm_up, lambda: samples.append(rss_bytes(pid))))
        wall = time.monotonic() - started
        asyncio.run(soak.quiet())  # and the service counts the clients that left last
        rss["end"] = rss_bytes(pid)
        metrics = httpx.get(server.url + "/metrics", timeout=30).text
        ready = server.health("/ready")
        log_tail = server.log()[-2000:]
        exit_status = server.stop()
    served = {s.labels["status"]: int(s.value)
              for family in text_string_to_metric_families(metrics) for s in family.samples
              if s.name == "pulpie_rt_requests_total"}
    growth = rss["end"] / rss["warm"] - 1 if rss.get("warm") else None
    third = max(1, len(samples) // 3)
    trend = (sorted(samples[-third:])[third // 2] / sorted(samples[:third])[third // 2] - 1
             if samples else None)
    return {
        "seconds": wall, "callers": callers, "warm_up_s": warm_up, "seed": seed,
        "requests": sum(soak.statuses.values()),
        "statuses": {str(k): v for k, v in sorted(soak.statuses.items(), key=str)},
        "by_case": {case: {str(k): v for k, v in counts.items()}
                    for case, counts in soak.by_case.items()},
        "served_requests_total": served,
        "transport_errors": dict(soak.transport_errors),
        "page_errors_in_200s": soak.page_errors,
        "latency_s": {"p50": percentile(soak.latencies, 50),
                      "p99": percentile(soak.latencies, 99),
                      "good_p50": percentile(soak.good_latencies, 50),
                      "good_p99": percentile(soak.good_latencies, 99)},
        "rss_bytes": rss, "rss_growth": growth, "max_growth": max_growth,
        "rss_samples": samples, "rss_trend": trend,
        "passed": (growth is not None and growth <= max_growth and not soak.transport_errors
                   and ready == 200 and exit_status == 0),
        "ready_at_end": ready, "exit_status": exit_status,
        "log_tail": log_tail,
    }


def soak_table(report: dict[str, Any]) -> str:
    lat = report["latency_s"]
    mib = {k: v / 2 ** 20 for k, v in report["rss_bytes"].items()}
    rows = [(case, sum(counts.values()), ", ".join(f"{k}: {v}" for k, v in sorted(
        counts.items()))) for case, counts in report["by_case"].items()]
    table = format_table([f"soak: {report['callers']} callers, {report['seconds']:.0f} s",
                          "requests", "statuses"], rows)
    growth = report["rss_growth"]
    return "\n".join([
        table,
        f"  callers saw: {report['statuses']}; transport errors: "
        f"{report['transport_errors'] or 'none'}",
        f"  the service counted (requests_total): {report['served_requests_total']}",
        f"  latency: p50 {lat['p50']:.3f} s, p99 {lat['p99']:.3f} s (good requests: p50 "
        f"{lat['good_p50']:.3f} s, p99 {lat['good_p99']:.3f} s)",
        f"  RSS: start {mib['start']:.0f} MiB, idle after {report['warm_up_s']:g} s of warm-up "
        f"{mib.get('warm', 0):.0f} MiB, idle at the end {mib['end']:.0f} MiB: growth "
        + (f"{growth:+.1%}" if growth is not None else "n/a")
        + f" (limit {report['max_growth']:.0%}); under load every {RSS_EVERY_S} s: "
        + (f"{min(report['rss_samples']) / 2 ** 20:.0f}-{max(report['rss_samples']) / 2 ** 20:.0f}"
           f" MiB, median of the last third {report['rss_trend']:+.1%} against the first"
           if report["rss_samples"] else "no samples"),
        f"  ready at the end: {report['ready_at_end']}; exit status after SIGTERM: "
        f"{report['exit_status']}; {'PASSED' if report['passed'] else 'FAILED'}",
    ])


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS)
    parser.add_argument("--callers", type=int, default=DEFAULT_CALLERS)
    parser.add_argument("--warm-up", type=float, default=None,
                        help="seconds of load before the starting RSS is taken (default: a "
                             "fifth of the run, at most 60)")
    parser.add_argument("--model", default=None, help="default: the embedded model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-growth", type=float, default=0.10)
    parser.add_argument("--out", default=None, help="JSON file or folder (default bench/results)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak",
                                     description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    report = run_soak(args.seconds, args.callers, args.warm_up, args.model, args.seed,
                      args.max_growth)
    print(soak_table(report))
    path = write_result("soak", {"kind": "soak", "machine": machine_info(), "soak": report},
                        args.out)
    print(f"\nwrote {path}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
