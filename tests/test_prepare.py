"""``Preparer.prepare`` runs in the compiled core past the decode stage (``native.prepare_page``,
the C library's prepare): it gives the page its Python specification
(``tests/spec/prepare_spec.py``) gives, error or not, on the dev pages, under limits that
cut them, with and without tokens and block features, for bytes and for str."""

from __future__ import annotations

import dataclasses

import pytest
from rt_helpers import short_context_bundle, small_dev_pages
from spec.prepare_spec import spec_prepare

from pulpie_rt.runtime.flow.pages import PageError, PageLimits, Preparer
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.resolve import embedded_model_dir


def default_bundle():
    return load_bundle(embedded_model_dir(), "accurate")  # tokens and chunks


def _outcome(preparer: Preparer, html, prepare, content_type=None):
    try:
        page = prepare(preparer, html, content_type)
    except PageError as exc:
        return str(exc)
    fields = dataclasses.asdict(page)
    features = fields.pop("features")
    fields["chunks"] = [(c.token_ids, c.block_indices) for c in page.chunks]
    return fields, None if features is None else (features.shape, features.tobytes())


def _same(preparer: Preparer, html, content_type=None) -> None:
    ours = _outcome(preparer, html, Preparer.prepare, content_type)
    assert ours == _outcome(preparer, html, spec_prepare, content_type)
    return ours


@pytest.fixture(scope="module")
def default_preparer() -> Preparer:
    return Preparer.from_bundle(default_bundle())


def test_the_default_model_prepares_dev_pages_as_the_specification(dev_pages, default_preparer):
    assert default_preparer.with_features and default_preparer.with_tokens
    n_chunks = 0
    for page in dev_pages[::3]:
        fields, features = _same(default_preparer, page["html"].encode("utf-8"))
        n_chunks += len(fields["chunks"])
        assert features is not None and features[0] == (len(fields["item_ids"]), 166)
    assert n_chunks > 85


def test_limits_cut_dev_pages_as_the_specification(tmp_path_factory):
    bundle = short_context_bundle(tmp_path_factory.mktemp("prepare"), max_tokens=512)
    loaded = load_bundle(bundle)
    preparer = Preparer.from_bundle(loaded, limits=PageLimits(max_input_bytes=20_000,
                                                              max_page_tokens=1024))
    # the limits off: nothing said to be cut
    unlimited = Preparer.from_bundle(loaded, limits=PageLimits(None, None))
    cut = 0
    for page in small_dev_pages()[::2]:
        outcome = _same(preparer, page["html"])
        cut += outcome[0]["truncated"] is not None
        assert _same(unlimited, page["html"])[0]["truncated"] is None
    assert cut >= 10


def test_a_rescorer_only_profile_prepares_no_chunks(dev_pages):
    preparer = Preparer.from_bundle(default_bundle())
    preparer.with_tokens = False
    for page in dev_pages[:40:4]:
        fields, _ = _same(preparer, page["html"])
        assert fields["chunks"] == [] and fields["n_classified"] == len(fields["item_ids"])


@pytest.mark.parametrize("html", [
    "<html><body><p>a\ud800b</p><p>x\udcff</p><p title='\ud83d'>t</p></body></html>",
    "plain text without any markup",
    "",
    "<p _item_id=\"\u0661\">unicode digits in the page</p><p>b</p>",
    "<html><body>" + "<p>\u20ac\ud800 word</p>" * 3000 + "</body></html>",
])
def test_odd_pages_as_the_specification(default_preparer, html):
    _same(default_preparer, html)
    tight = Preparer.from_bundle(default_bundle(), limits=PageLimits(max_input_bytes=1001,
                                                                      max_page_tokens=64))
    _same(tight, html)
    _same(tight, html.encode("utf-8", "surrogatepass"), "text/html; charset=utf-8")


def test_a_failing_page_names_its_stage(default_preparer):
    bad = Preparer.from_bundle(default_bundle(), cutoff_length=-2)
    assert _outcome(bad, "<p>x</p>", Preparer.prepare) == _outcome(bad, "<p>x</p>", spec_prepare)
    assert _outcome(bad, "<p>x</p>", Preparer.prepare) == (
        "simplify: SimplifyError: cutoff_length must be a non-negative int, not -2")
    missing = Preparer("/nonexistent/tokenizer.json", 5, None, None)
    assert _outcome(missing, "<p>x</p>", Preparer.prepare) == \
        _outcome(missing, "<p>x</p>", spec_prepare)
    assert _outcome(missing, "<p>x</p>", Preparer.prepare).startswith(
        "tokenize: FileNotFoundError: tokenizer file not found")
