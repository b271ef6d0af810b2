"""Train pages with hidden dialogs: a corpus derived from the train pages for the fast profile
(``Recipe.fast_hidden_dialogs``).

Why: the fast profile segments pages keeping their hidden elements (``Recipe
.fast_keep_hidden``), so the policies, consent notices and sign-up forms that a page holds in
closed dialogs become blocks of long prose. Trained with the readability pages
(``Recipe.fast_fold_readability``, whose references are long prose), the profile keeps them:
on ``wcxb/dev/0632``, a shoe shop's collection, every seed keeps its privacy and refund
policies (about 6,000 words in two ``aria-modal`` dialogs; word precision 0.07), which the
shipped profile drops. Few train pages hold such prose in a dialog for it to learn from.

What: a share of the train pages with a reference (of every page type: dialogs are not an
article's) get one closed dialog before ``</body>`` (or, for a consent banner, after
``<body>``), in one of four common markups (an ``aria-modal`` policy modal, an HTML
``<dialog>``, a cookie-consent banner, a newsletter pop-up), each hidden as pages hide them
(``display:none``, ``aria-hidden``, ``hidden``, a closed ``<dialog>``). Its text is paragraphs
of other train pages' ground truth, so the words alone read like main content and only the
structure says otherwise. The page's reference is unchanged, so the rule labels
(``eval.labels``) make every block of the dialog not main, and the rest of the page keeps its
labels. The same corpus, share and seed give the same pages, byte for byte.
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Callable
from pathlib import Path

from train.data import CACHE_DIR, derived_corpus

PARAGRAPHS = (2, 30)  # paragraphs in a dialog, both ends included
PARAGRAPH_WORDS = (20, 200)  # the words of a paragraph taken from another page, both included
POLICY_TITLES = ("Privacy policy", "Refund policy", "Terms of service", "Shipping policy",
                 "Cookie policy", "Terms and conditions")
_BODY_OPEN = re.compile(r"<body\b[^>]*>", re.I)
_BODY_CLOSE = re.compile(r"</body>", re.I)


def _text(paragraphs: list[str]) -> str:
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


def policy_modal(rng: random.Random, paragraphs: list[str]) -> str:
    """A policy in an ``aria-modal`` dialog that a script opens (a utility-class shop theme)."""
    title = rng.choice(POLICY_TITLES)
    key = title.lower().replace(" ", "-")
    return (f'<div id="modal-{key}" role="dialog" aria-modal="true" aria-labelledby='
            f'"dialog_{key}" aria-hidden="true" class="z-50 fixed inset-0 overflow-y-auto" '
            f'style="display:none"><div class="flex min-h-screen items-center justify-center">'
            f'<div class="relative rounded-lg bg-white p-6 shadow-xl"><div class="flex '
            f'justify-between"><h2 id="dialog_{key}">{title}</h2><button type="button" '
            f'aria-label="Close">Close</button></div><div class="prose prose-sm"><h1>{title}'
            f'</h1>{_text(paragraphs)}</div></div></div></div>')


def html_dialog(rng: random.Random, paragraphs: list[str]) -> str:
    """A closed HTML ``<dialog>`` with a heading, its text and a close form."""
    title = rng.choice(POLICY_TITLES)
    return (f'<dialog class="modal" id="dialog-{rng.randint(100, 999)}"><div '
            f'class="modal-content"><header class="modal-header"><h3>{title}</h3></header>'
            f'<div class="modal-body">{_text(paragraphs)}</div><form method="dialog" '
            f'class="modal-footer"><button>Close</button></form></div></dialog>')


def consent_banner(rng: random.Random, paragraphs: list[str]) -> str:
    """A cookie-consent notice with its choices, hidden until a script shows it."""
    return (f'<div id="cookie-consent" class="consent-banner gdpr-notice" role="region" '
            f'aria-label="Cookie consent" hidden><div class="consent-inner"><h2>We value your '
            f'privacy</h2>{_text(paragraphs)}<div class="consent-actions"><button '
            f'class="btn-accept">Accept all</button><button class="btn-reject">Reject all'
            f'</button><a href="/cookie-settings">Manage preferences</a></div></div></div>')


def newsletter_popup(rng: random.Random, paragraphs: list[str]) -> str:
    """A newsletter sign-up pop-up with its pitch, hidden behind an overlay."""
    return (f'<div class="popup-overlay newsletter-popup" style="display: none;" '
            f'aria-hidden="true"><div class="popup-content"><span class="popup-close">&times;'
            f'</span><h3>Join our newsletter</h3>{_text(paragraphs)}<form class="subscribe-form">'
            f'<input type="email" placeholder="Your email address"><button '
            f'type="submit">Subscribe</button></form></div></div>')


MARKUPS: tuple[Callable[[random.Random, list[str]], str], ...] = (
    policy_modal, html_dialog, consent_banner, newsletter_popup)


def _paragraphs(reference: str | None) -> list[str]:
    return [line.strip() for line in (reference or "").splitlines()
            if PARAGRAPH_WORDS[0] <= len(line.split()) <= PARAGRAPH_WORDS[1]]


def with_hidden_dialogs(pages: list[dict], share: float, seed: int
                        ) -> tuple[list[dict], list[str]]:
    """``pages`` with a hidden dialog in about ``share`` of those with a reference, and the ids
    of the pages given one; the rest unchanged."""
    paragraphs = {p["id"]: _paragraphs(p.get("reference")) for p in pages}
    donors = [pid for pid in paragraphs if paragraphs[pid]]
    rng = random.Random(seed)
    out, given = [], []
    for page in pages:
        if page.get("reference") and rng.random() < share:
            markup = rng.choice(MARKUPS)
            texts: list[str] = []
            wanted = rng.randint(*PARAGRAPHS)
            others = [pid for pid in donors if pid != page["id"]]
            while len(texts) < wanted:
                texts += paragraphs[rng.choice(others)][:wanted - len(texts)]
            dialog = markup(rng, texts)
            source = page["html"]
            if markup is consent_banner and (opening := _BODY_OPEN.search(source)):
                at = opening.end()
            else:
                closing = _BODY_CLOSE.search(source)
                at = closing.start() if closing else len(source)
            page = {**page, "html": source[:at] + dialog + source[at:]}
            given.append(page["id"])
        out.append(page)
    return out, given


def hidden_dialog_corpus(corpus: str, share: float, seed: int, cache_dir: Path = CACHE_DIR,
                         log=print) -> str:
    """The path (a corpus name, ``pulpie_rt.corpus``) of ``corpus``'s pages with hidden
    dialogs (``with_hidden_dialogs``), written under ``cache_dir`` once (keyed by
    ``corpus_version``, the share and the seed) and read from there after."""
    return derived_corpus(corpus, "dialogs", share, seed,
                          lambda pages: with_hidden_dialogs(pages, share, seed),
                          "hidden dialogs", "given one", "pages with a reference", cache_dir,
                          log)
