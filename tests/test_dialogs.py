"""The train pages with hidden dialogs (``train.dialogs``, ``Recipe.fast_hidden_dialogs``):
which pages get one, where it goes, that the segmentation the fast profile trains on keeps it
as blocks labelled not main, and that the fast profile reads them after the stories."""

from __future__ import annotations

import random
import re

import pytest
from rt_helpers import (
    NOT_WCXB,
    WCXB_ARTICLES,
    WCXB_FORUM,
    train_small_fast_profile,
    write_corpus,
)

from pulpie_rt.corpus import iter_pages
from train.data import page_blocks
from train.dialogs import (
    MARKUPS,
    consent_banner,
    hidden_dialog_corpus,
    html_dialog,
    with_hidden_dialogs,
)

PARAGRAPH = ("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron "
             "pi rho sigma tau upsilon phi chi psi omega, all of it a dialog's own text.")


@pytest.mark.parametrize("markup", MARKUPS, ids=lambda m: m.__name__)
def test_each_markup_is_hidden_and_still_segmented_into_blocks_labelled_not_main(
        derivation_pages, markup):
    page = derivation_pages[WCXB_ARTICLES[0]]
    dialog = markup(random.Random(0), [PARAGRAPH, PARAGRAPH.upper(), PARAGRAPH.title()])
    # hidden as pages hide a closed dialog
    assert re.search(r"display: ?none|aria-hidden=\"true\"| hidden>|^<dialog ", dialog)
    at = page["html"].lower().rfind("</body>")
    added = {**page, "html": page["html"][:at] + dialog + page["html"][at:]}
    before = page_blocks(page, True, True)
    after = page_blocks(added, True, True)
    # the fast profile's segmentation keeps hidden elements: the three paragraphs are blocks
    texts = [b for b in after["blocks"] if "psi omega" in b.lower()]
    assert len(texts) == 3
    # the page's blocks come first, as they were (the last one then no longer carries the
    # document's closing tags), each with its label; none of the dialog's blocks is main
    kept = len(before["blocks"])
    assert [b.removesuffix("</body></html>") for b in before["blocks"]] == after["blocks"][:kept]
    assert after["labels"][:kept] == before["labels"]
    assert len(after["blocks"]) - kept >= 4 and not any(after["labels"][kept:])


def test_pages_with_a_reference_get_one_before_the_body_ends_and_the_seed_decides(
        derivation_pages):
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM, NOT_WCXB)]
    no_reference = {**pages[0], "id": "no-reference", "reference": None}
    out, given = with_hidden_dialogs(pages + [no_reference], 1.0, 0)
    assert given == [p["id"] for p in pages] and out[-1] is no_reference
    for before, after in zip(pages, out, strict=False):
        assert after["reference"] == before["reference"]
        added = len(after["html"]) - len(before["html"])
        # inserted whole in one place: the page is its own text around it
        cut = re.search(r'<div id="modal-|<dialog class="modal"|<div id="cookie-consent"|'
                        r'<div class="popup-overlay', after["html"]).start()
        assert after["html"][:cut] + after["html"][cut + added:] == before["html"]
        dialog = after["html"][cut:cut + added]
        if dialog.startswith('<div id="cookie-consent"'):
            assert re.search(r"<body\b[^>]*>$", after["html"][:cut], re.I)
        else:
            assert after["html"][cut + added:].lower().startswith("</body>")
        # its paragraphs are other pages' ground-truth lines, none of this page's
        paragraphs = re.findall(r"<p>([^<]*)</p>", dialog)
        assert paragraphs and not any(p in before["reference"] for p in paragraphs)
    assert with_hidden_dialogs(pages, 1.0, 0)[0] == out[:-1]
    assert with_hidden_dialogs(pages, 1.0, 1)[0] != out[:-1]
    assert with_hidden_dialogs(pages, 0.0, 0) == (pages, [])
    assert {m.__name__ for m in MARKUPS} == {"policy_modal", "html_dialog", "consent_banner",
                                             "newsletter_popup"}
    assert html_dialog(random.Random(0), ["x"]).startswith('<dialog class="modal"')
    assert 'aria-label="Cookie consent" hidden>' in consent_banner(random.Random(0), ["x"])


def test_the_fast_profile_reads_the_dialogs_after_the_stories(derivation_pages, tmp_path,
                                                             monkeypatch):
    from train.fit import Recipe

    assert Recipe().fast_hidden_dialogs == 0.0  # measured, not shipped
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM)]
    write_corpus(tmp_path, "mini", pages)
    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, tmp_path,
                                            fast_comment_threads=1.0, fast_longer_stories=1.0,
                                            fast_hidden_dialogs=1.0)
    stories = next(line for line in logged if line.startswith("longer stories: "))
    dialogs = next(line for line in logged if line.startswith("hidden dialogs: "))
    assert logged.index(stories) < logged.index(dialogs)
    assert dialogs.startswith(f"hidden dialogs: 4 of 4 {stories.rpartition(' -> ')[2]} pages "
                              "given one (pages with a reference, share 1.0, seed 0) -> ")
    corpus = dialogs.rpartition(" -> ")[2]
    assert any(line.endswith(f" on 4 {corpus} pages (out of fold)") for line in logged)
    # the stories' added paragraphs are still main in the pages with dialogs
    read = list(iter_pages(corpus))
    assert [bool(p.get("added_main")) for p in read] == [True, True, True, False]
    assert fast["blocks"] == sum(len(page_blocks(p, True, True)["blocks"]) for p in read)
    # written once, then read from the cache
    again: list[str] = []
    assert hidden_dialog_corpus(stories.rpartition(" -> ")[2], 1.0, 0, log=again.append) == corpus
    assert again == [f"hidden dialogs: {stories.rpartition(' -> ')[2]} pages (share 1.0, seed 0) "
                     f"from {corpus}"]


def test_the_fast_profile_trained_on_the_dialog_columns_runs_in_the_engine(derivation_pages,
                                                                           tmp_path, monkeypatch):
    """fast_dialog_columns: both stages read blocks-v4 in context-v5 (the training's feature
    names end with the dialog columns), the profile says so, and a bundle holding it runs
    through the engine with the page's dialog blocks beside the others."""
    import json

    from rt_helpers import bundle_with_fast_profile

    from pulpie_rt.runtime.flow.extractor import Extractor
    from pulpie_rt.runtime.model.bundle import load_bundle
    from pulpie_rt.runtime.stages.features import DIALOG_NAMES, FEATURES_V4
    from pulpie_rt.runtime.stages.rescore import CONTEXT_V5, N_CONTEXT_V5, N_STAGE
    from train.fast import (
        context_names,
        stage_names,
    )
    from train.fit import Recipe

    assert Recipe().fast_dialog_columns is False  # measured, not shipped
    assert context_names(CONTEXT_V5)[-2:] == DIALOG_NAMES and len(context_names(CONTEXT_V5)) \
        == N_CONTEXT_V5 and len(stage_names(CONTEXT_V5)) == N_CONTEXT_V5 + N_STAGE
    pages = [derivation_pages[pid] for pid in (*WCXB_ARTICLES, WCXB_FORUM)]
    write_corpus(tmp_path, "mini", pages)
    fast, logged = train_small_fast_profile(tmp_path, monkeypatch, tmp_path,
                                            fast_comment_threads=0.0, fast_hidden_dialogs=1.0,
                                            fast_dialog_columns=True, fast_rail_columns=False)
    assert fast["rescorer"]["features"] == FEATURES_V4 and fast["rescorer"]["context"] == \
        CONTEXT_V5
    assert any(f"x {N_CONTEXT_V5} columns (context-v5)" in line for line in logged), logged
    bundle = bundle_with_fast_profile(tmp_path / "copy", fast, tmp_path / "work" / "bundle")
    assert load_bundle(bundle, "fast").feature_layout == FEATURES_V4
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["profiles"]["fast"]["rescorer"]["context"] == CONTEXT_V5
    html = derivation_pages[WCXB_ARTICLES[0]]["html"].replace(
        "</body>", html_dialog(random.Random(0), [PARAGRAPH]) + "</body>")
    result = Extractor(bundle, profile="fast").extract(html)
    assert result.error is None and result.labels
