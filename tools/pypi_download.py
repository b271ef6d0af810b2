"""One pinned file of a package index (a wheel or an sdist), downloaded with the standard
library alone and checked against its sha256.

The build fetches two files from PyPI: ONNX Runtime's wheel (``tools/ort_library.py``, its C
library) and selectolax's sdist (``core/build.rs``, lexbor's C sources). Both run where pip may
be missing: ``python -m build`` makes an isolated environment without pip, and a build from the
sdist runs in one. So neither asks pip: this module reads the index's simple API (PEP 691 JSON,
or the PEP 503 HTML page where an index gives no JSON), finds the file by its name, downloads
it over HTTPS and keeps it only when its sha256 is the one pinned.

The index is ``$PULPIE_RT_INDEX_URL``, else ``$PIP_INDEX_URL``, else PyPI's
(https://pypi.org/simple/); the proxy variables (``https_proxy``…) apply as for any urllib
request. Standard library only.

    python3 tools/pypi_download.py PROJECT FILENAME SHA256 DEST_DIR
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

DEFAULT_INDEX = "https://pypi.org/simple/"
INDEX_ENV = ("PULPIE_RT_INDEX_URL", "PIP_INDEX_URL")
TIMEOUT_S = 120
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


class DownloadError(RuntimeError):
    pass


def index_url() -> str:
    for name in INDEX_ENV:
        if os.environ.get(name):
            return os.environ[name].rstrip("/") + "/"
    return DEFAULT_INDEX


def _get(url: str, accept: str | None = None) -> tuple[bytes, str]:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.read(), response.headers.get("Content-Type", "")
    except (urllib.error.URLError, OSError) as exc:
        raise DownloadError(f"GET {url}: {getattr(exc, 'reason', exc)}") from None


def file_url(project: str, filename: str, index: str | None = None) -> str:
    """The URL of ``filename`` on ``project``'s page of the index."""
    index = index or index_url()
    page = urllib.parse.urljoin(index, f"{re.sub(r'[-_.]+', '-', project).lower()}/")
    body, content_type = _get(page, f"{SIMPLE_JSON}, text/html;q=0.1")
    if content_type.split(";")[0].strip() == SIMPLE_JSON:
        links = [(f["filename"], f["url"]) for f in json.loads(body)["files"]]
    else:  # PEP 503 HTML: <a href="URL#sha256=...">FILENAME</a>
        links = [(html.unescape(name).strip(), html.unescape(href)) for href, name in
                 re.findall(r'<a\s[^>]*href="([^"]+)"[^>]*>([^<]+)</a>', body.decode())]
    for name, url in links:
        if name == filename:
            return urllib.parse.urljoin(page, url.split("#")[0])
    raise DownloadError(f"{filename} is not on {page} ({len(links)} files listed there)")


def download(project: str, filename: str, sha256: str, dest: Path | str,
             index: str | None = None) -> Path:
    """``dest/filename``, downloaded from the index unless already there with ``sha256``;
    raises ``DownloadError`` (saying why) on any other outcome, leaving no partial file."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / filename
    if target.is_file() and sha256(target) == sha256:
        return target
    url = file_url(project, filename, index)
    body, _ = _get(url)
    found = hashlib.sha256(body).hexdigest()
    if found != sha256:
        raise DownloadError(f"{url}: sha256 {found}, expected {sha256}")
    with tempfile.NamedTemporaryFile(dir=dest, prefix=f".{filename}.", delete=False) as fh:
        fh.write(body)
    os.replace(fh.name, target)  # whole or not at all: a concurrent build sees no half file
    return target


def sha256(path: Path) -> str:
    """The sha256 of the file at ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 4:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    project, filename, sha256, dest = args
    try:
        print(download(project, filename, sha256, Path(dest)))
    except DownloadError as exc:
        print(f"tools/pypi_download.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
