"""Page bytes -> text (``stages.decode``): the decision order on crafted pages, real pages
re-encoded into legacy encodings (``parity.decode_parity``'s cases) read back as their originals,
and the same decoding through ``Extractor``, ``pulpie-rt extract`` and WARC input, recorded in
each output."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
from rt_helpers import dev_subset, tiny_bundle

from eval.reencode import KINDS, cases
from parity.decode_parity import write_warc
from pulpie_rt import Extractor
from pulpie_rt.runtime.stages.decode import decode, decode_input

CAFE = "<p>Café crème à la carte, naïve façade</p>"
PRIVET = "<p>Привет, как дела? Это страница на русском языке.</p>"
NIHONGO = "<p>日本語のページです。文字コードの判定を確かめます。</p>"


def decided(data: bytes, content_type: str | None = None) -> tuple[str, str, str]:
    d = decode(data, content_type)
    return d.text, d.encoding, d.source


def test_meta_charset_and_http_equiv():
    page = '<meta charset="windows-1252">' + CAFE
    assert decided(page.encode("cp1252")) == (page, "windows-1252", "meta")
    page = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">' + PRIVET
    assert decided(page.encode("koi8-r")) == (page, "KOI8-R", "meta")
    # the Encoding Standard's labels: iso-8859-1 is windows-1252
    page = "<meta charset=iso-8859-1>" + CAFE
    assert decided(page.encode("latin-1")) == (page, "windows-1252", "meta")


def test_transport_charset_beats_meta_and_bom_beats_transport():
    page = "<meta charset=windows-1251>" + PRIVET
    data = page.encode("koi8-r")
    assert decided(data, "text/html; charset=KOI8-R") == (page, "KOI8-R", "transport")
    assert decided(data, "koi8-r") == (page, "KOI8-R", "transport")  # a bare label
    # a label the standard does not know is passed over
    assert decided(data, "text/html; charset=x-unknown")[1:] == ("windows-1251", "meta")
    bom = b"\xef\xbb\xbf" + CAFE.encode()
    assert decided(bom, "text/html; charset=windows-1252") == (CAFE, "UTF-8", "bom")


def test_the_bytes_settle_a_wrong_declaration():
    # a UTF-8 page declared legacy (a server default) is read as UTF-8
    page = "<meta charset=iso-8859-1>" + CAFE
    assert decided(page.encode(), "text/html; charset=iso-8859-1") == (
        page, "UTF-8", "utf-8-content")
    # a legacy page declared UTF-8, without one valid multi-byte sequence: the detector
    page = "<meta charset=utf-8>" + PRIVET
    assert decided(page.encode("cp1251")) == (page, "windows-1251", "detector")


def test_no_declaration():
    assert decided(PRIVET.encode("cp1251")) == (PRIVET, "windows-1251", "detector")
    assert decided(NIHONGO.encode("shift_jis")) == (NIHONGO, "Shift_JIS", "detector")
    assert decided(NIHONGO.encode("euc-jp")) == (NIHONGO, "EUC-JP", "detector")
    assert decided(b"<p>plain ASCII</p>") == ("<p>plain ASCII</p>", "UTF-8", "default")
    assert decided(b"") == ("", "UTF-8", "default")
    # UTF-8 with a broken byte: UTF-8, the byte replaced
    assert decided(CAFE.encode() + b"\xff") == (CAFE + "\ufffd", "UTF-8", "detector")


def test_text_input_is_taken_as_it_is():
    assert decode_input(CAFE, "text/html; charset=koi8-r") == (CAFE, None)
    assert decode_input(bytearray(CAFE.encode("cp1252")), "text/html; charset=windows-1252") == (
        CAFE, "windows-1252")


@pytest.fixture(scope="module")
def reencoded():
    return list(cases(list(dev_subset(3))))


def test_reencoded_real_pages_read_back_as_their_originals(reencoded):
    total, wrong = Counter(), Counter()
    for case in reencoded:
        total[case.kind] += 1
        if decode(case.data, case.content_type).text != case.original:
            wrong[case.kind] += 1
    assert set(total) == set(KINDS) and min(total.values()) > 100
    # declared: every page; undeclared (the detector): all but a handful
    assert wrong["meta"] == wrong["http-equiv"] == wrong["transport"] == 0, wrong
    assert wrong["none"] <= 0.02 * total["none"], (wrong, total)


def sample(reencoded, per_kind: int = 2):
    """A few cases of every kind, in different encodings, of the smallest pages (cheap model
    runs)."""
    chosen, seen = [], Counter()
    for case in sorted(reencoded, key=lambda c: len(c.data)):
        if seen[case.kind] < per_kind and case.label not in {c.label for c in chosen
                                                             if c.kind == case.kind}:
            chosen.append(case)
            seen[case.kind] += 1
    return chosen


def test_extractor_bytes_give_the_originals_markdown(reencoded):
    extractor = Extractor(str(tiny_bundle()))
    chosen = sample(reencoded)
    originals = extractor.extract_batch([c.original for c in chosen])
    got = extractor.extract_batch([c.data for c in chosen], [c.content_type for c in chosen])
    for case, original, result in zip(chosen, originals, got, strict=True):
        assert (result.markdown, result.error) == (original.markdown, None), case.page_id
        assert result.encoding == decode(case.data, case.content_type).encoding
        assert original.encoding is None
    assert extractor.extract(chosen[0].data, chosen[0].content_type).markdown == (
        originals[0].markdown)


def test_cli_extract_and_warc_run_decode_the_same(reencoded, tmp_path):
    chosen = sample(reencoded, per_kind=1)
    extractor = Extractor(str(tiny_bundle()))
    originals = [r.markdown for r in extractor.extract_batch([c.original for c in chosen])]
    cli = [sys.executable, "-m", "pulpie_rt.cli"]
    for case, original in zip(chosen, originals, strict=True):
        page = tmp_path / "page.html"
        page.write_bytes(case.data)
        command = [*cli, "extract", str(page), "--model", str(tiny_bundle())]
        if case.content_type is not None:
            command += ["--content-type", case.content_type]
        done = subprocess.run(command, capture_output=True, check=True)
        assert done.stdout.decode().rstrip("\n") == original.rstrip("\n"), case.page_id
    warc = tmp_path / "pages.warc"
    write_warc(warc, chosen)
    out = tmp_path / "out.jsonl"
    subprocess.run([*cli, "run", str(warc), "--out", str(out), "--model", str(tiny_bundle()),
                    "--workers", "0", "--quiet"], capture_output=True, check=True)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["markdown"] for r in records] == originals
    assert [r["encoding"] for r in records] == [
        decode(c.data, c.content_type).encoding for c in chosen]
