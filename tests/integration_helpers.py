"""What the Ray Data and datatrove tests share: the real dev pages they run, and what
``Extractor`` (the embedded default model) makes of each, computed once per test run.

Each integration runs twice (``SETTINGS``): with the default model's ``accurate`` profile
(the transformer) on every 4th dev page of at most 40,000 characters (a few seconds of model
time on 2 cores; ``PULPIE_RT_INTEGRATION_PAGES=all`` takes all 254 instead), and with its
default profile (``fast``, the block rescorer alone) on all 254 dev pages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

from pulpie_rt.corpus import load_pages

SUBSET_STEP = 4
SUBSET_MAX_CHARS = 40_000
# Rows a wrong integration mishandles: markup with no visible text in it (a page with text but
# no blocks gives its text, so this one is empty), and no page at all.
GARBAGE_HTML = "\x00 </p></div><br><div <!-- \x7f\x7f\ufffd &#xZZ; <<<"


@dataclass(frozen=True)
class Setting:
    profile: str | None  # None: the model's default profile
    all_pages: bool

    def __str__(self) -> str:
        return f"{self.profile or 'default'}-{'all' if self.all_pages else 'subset'}"


SETTINGS = (Setting("accurate",
                    all_pages=os.environ.get("PULPIE_RT_INTEGRATION_PAGES") == "all"),
            Setting(None, all_pages=True))


@lru_cache(maxsize=2)
def integration_pages(all_pages: bool = False) -> tuple[dict, ...]:
    """``{id, html}`` of the dev pages the integration tests run."""
    pages = load_pages("dev")
    if not all_pages:
        pages = [p for p in pages if len(p["html"]) <= SUBSET_MAX_CHARS][::SUBSET_STEP]
    return tuple({"id": p["id"], "html": p["html"]} for p in pages)


DEFAULT_SETTING = SETTINGS[1]  # the model's default profile, what an integration runs unasked


@lru_cache(maxsize=2)
def extractor_results(setting: Setting = DEFAULT_SETTING
                      ) -> dict[str, tuple[str, int, int, str | None]]:
    """``Extractor(profile=setting.profile)``'s ``(markdown, n_main, n_other, error)`` by page
    id, for the setting's pages and the garbage row."""
    from pulpie_rt import Extractor

    pages = [*integration_pages(setting.all_pages), {"id": "garbage", "html": GARBAGE_HTML}]
    results = Extractor(profile=setting.profile).extract_batch([p["html"] for p in pages])
    return {p["id"]: (r.markdown, r.n_main, r.n_other, r.error)
            for p, r in zip(pages, results, strict=True)}
