"""``pulpie-rt serve`` as a child process on 127.0.0.1: start, wait until ready, stop with SIGTERM
(the benchmark and the tests run the service this way, as a user does)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """Every descendant process of ``pid``, children first (read from /proc; the service and
    ``pulpie-rt run`` start none: threads on one engine)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(0), []):
            found.append(child)
            todo.append(child)
    return found


class LocalServer:
    """``python -m pulpie_rt.cli serve --port <free> OPTIONS`` with its output in ``log_path``.

    ``env`` is added to this process's environment (a value None removes the variable).
    """

    def __init__(self, options: list[str], log_path: str | Path,
                 env: dict[str, str | None] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(log_path)
        child_env = dict(os.environ)
        for name, value in (env or {}).items():
            if value is None:
                child_env.pop(name, None)
            else:
                child_env[name] = value
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pulpie_rt.cli", "serve", "--port", str(self.port),
                 *options], stdout=log, stderr=subprocess.STDOUT, env=child_env)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def health(self, path: str = "/ready") -> int | None:
        """``GET path``'s status (readiness by default), or None when nothing answers."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return None

    def wait_ready(self, timeout: float = 300) -> None:
        """Until ``/ready`` answers 200; ``RuntimeError`` with the log if the server exits
        or is not ready in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pulpie-rt serve exited ({self.process.returncode}):\n"
                                   f"{self.log()}")
            if self.health() == 200:
                return
            time.sleep(0.2)
        raise RuntimeError(f"pulpie-rt serve not ready after {timeout:g} s:\n{self.log()}")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM (a graceful stop), then SIGKILL after ``timeout``; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self) -> LocalServer:
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
