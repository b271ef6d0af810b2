"""What one page may cost (``PageLimits``) and what a page without blocks gives: the cut is
exact, said in the result, and pages under the limits are untouched."""

from __future__ import annotations

import pytest
from rt_helpers import short_context_bundle, small_dev_pages
from spec.prepare_spec import cut_input, keep_chunks

from pulpie_rt import Extractor
from pulpie_rt.runtime.flow.pages import (
    EMPTY_NO_MAIN,
    EMPTY_NO_TEXT,
    PageLimits,
    Preparer,
)
from pulpie_rt.runtime.stages.chunks import Chunk

NO_LIMITS = PageLimits(max_input_bytes=None, max_page_tokens=None)


def _chunks(*sizes_and_blocks: tuple[int, list[int]]) -> list[Chunk]:
    return [Chunk([7] * size, blocks) for size, blocks in sizes_and_blocks]


def test_keep_chunks_keeps_the_first_chunks_up_to_the_token_limit():
    chunks = _chunks((100, [0, 1]), (100, [2]), (100, [3, 4]))
    assert keep_chunks(chunks, None) == (chunks, 5)
    assert keep_chunks(chunks, 300) == (chunks, 5)
    assert keep_chunks(chunks, 299) == (chunks[:2], 3)
    assert keep_chunks(chunks, 150) == (chunks[:1], 2)
    # the first chunk always runs, even over the limit: a page is never left unread
    assert keep_chunks(chunks, 10) == (chunks[:1], 2)
    assert keep_chunks([], 10) == ([], 0)


def test_cut_input_cuts_at_a_character_boundary_and_says_so():
    assert cut_input("abc", None) == ("abc", None)
    assert cut_input("abc", 3) == ("abc", None)
    text = "ab€€"  # € is 3 bytes in UTF-8: 8 bytes in all
    assert cut_input(text, 4) == ("ab", "the input was cut to its first 4 of 8 bytes")
    assert cut_input(text, 5) == ("ab€", "the input was cut to its first 5 of 8 bytes")


@pytest.fixture(scope="module")
def tiny_extractors(tmp_path_factory):
    """The tiny checkpoint with 512-token chunks: most small dev pages span several."""
    bundle = short_context_bundle(tmp_path_factory.mktemp("limits"), max_tokens=512)
    return Extractor(bundle, limits=NO_LIMITS), Extractor(
        bundle, limits=PageLimits(max_page_tokens=2048))


def test_a_page_over_the_token_limit_keeps_the_labels_of_what_the_model_read(tiny_extractors):
    """The tiny checkpoint takes the argmax at each SEP (the reference's decoding), so every
    chunk's labels depend on that chunk alone: the first chunks must keep exactly the labels
    of the unlimited run, every later block is "other", and the result says what was cut."""
    unlimited, limited = tiny_extractors
    pages = [p["html"] for p in small_dev_pages()[:40]]
    whole = unlimited.extract_batch(pages)
    cut = limited.extract_batch(pages)
    n_cut = 0
    for page, full, part in zip(pages, whole, cut, strict=True):
        chunks = preparer_of(limited).prepare(page).chunks
        n_kept = max(chunks[-1].block_indices) + 1
        ids = list(full.labels)
        if part.truncated is None:
            assert part.labels == full.labels and part.markdown == full.markdown
            continue
        n_cut += 1
        assert part.truncated == (f"{len(ids) - n_kept} of {len(ids)} blocks past the first "
                                  "2,048 tokens were not classified (labelled other)")
        assert [part.labels[i] for i in ids[:n_kept]] == [full.labels[i] for i in ids[:n_kept]]
        assert {part.labels[i] for i in ids[n_kept:]} == {"other"}
    assert n_cut >= 5  # the check above ran on pages that were really cut


def preparer_of(extractor: Extractor) -> Preparer:
    """The core's prepare of ``extractor``'s model and limits, one page at a time (what the
    engine prepares a page with)."""
    return Preparer.from_bundle(extractor.bundle, limits=extractor.engine.limits)


def test_the_default_limits_leave_real_pages_whole(dev_pages):
    """Every dev page is under the default limits with the default model's tokenizer (its
    ``accurate`` profile: the ``fast`` one reads no tokens)."""
    extractor = Extractor(profile="accurate")
    for page in dev_pages[::7]:
        prepared = preparer_of(extractor).prepare(page["html"])
        assert prepared.truncated is None, page["id"]
        assert prepared.n_classified == prepared.n_blocks


def test_a_page_without_blocks_gives_its_text_and_an_empty_one_says_why():
    extractor = Extractor()
    plain = extractor.extract("First line of plain text.\nSecond line, same paragraph.")
    assert plain.markdown == "First line of plain text. Second line, same paragraph."
    assert plain.labels == {} and plain.empty_reason is None
    (empty,) = extractor.extract_batch(["<html><body><script>var a;</script></body></html>"])
    assert empty.error is None and empty.markdown == "" and empty.empty_reason == EMPTY_NO_TEXT


def test_an_empty_result_with_blocks_says_no_block_was_main(tiny_extractors):
    """The tiny checkpoint labels some pages all other (its weights are random)."""
    unlimited, _ = tiny_extractors
    results = unlimited.extract_batch([p["html"] for p in small_dev_pages()[:40]])
    empty = [r for r in results if r.error is None and not r.markdown]
    assert empty, "no page came out empty: the assertion below checks nothing"
    assert {r.empty_reason for r in empty} == {EMPTY_NO_MAIN}
    assert all(r.empty_reason is None for r in results if r.markdown)
