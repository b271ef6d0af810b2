"""The page record's one definition (``runtime.flow.schema``) against what produces its values:
the C SDK's result accessors (``core/include/pulpie_rt.h``), ``PageResult``, and the user
guide's table. Each door's record is tested against it where the door is: tests/test_cli.py
(JSONL, Parquet), tests/test_serve.py (JSON, OpenAPI), tests/test_integration_ray.py (Arrow),
tests/test_integration_datatrove.py (metadata)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest
from rt_helpers import check_record, small_dev_pages

from pulpie_rt import Extractor, PageResult
from pulpie_rt.runtime import binding
from pulpie_rt.runtime.flow import schema

REPO = Path(__file__).resolve().parent.parent
# the result accessors that are not a field of their name: the per-block labels (the json
# format's labels field), what each label was decided from (the page inspector's scores and
# threshold, not in the record), the authors' count (the authors field's) and the destructor
NOT_FIELDS = {"n_labels", "label", "score", "threshold", "n_authors", "free"}
C_TYPES = {"string": ctypes.c_char_p, "integer": ctypes.c_uint32, "strings": ctypes.c_char_p}


def every_result_field() -> list[schema.Field]:
    return [schema.content_field(name) for name in schema.CONTENT_FORMATS] + list(
        schema.RESULT_FIELDS)


def test_the_c_sdk_result_has_one_accessor_per_field_of_its_type():
    declared = binding.parse((REPO / "core/include/pulpie_rt.h").read_text(encoding="utf-8"))
    prefix = "pulpie_rt_result_"
    accessors = {name.removeprefix(prefix): restype
                 for name, (_, restype) in declared.functions.items()
                 if name.startswith(prefix) and name.removeprefix(prefix) not in NOT_FIELDS}
    assert accessors == {f.name: C_TYPES[f.type] for f in every_result_field()}
    assert {prefix + "n_labels", prefix + "label"} <= set(declared.functions)  # LABELS


@pytest.fixture(scope="module")
def results() -> list[PageResult]:
    pages = [p["html"] for p in small_dev_pages(20_000)[:2]]
    return Extractor().extract_batch([*pages, "<p>caf\xe9</p>".encode("latin-1"), 12])


@pytest.mark.parametrize("content_format", schema.CONTENT_FORMATS)
def test_page_results_give_every_field_of_its_type(results, content_format):
    fields = schema.result_fields(content_format)
    for result in results:
        values = schema.result_values(result, content_format)
        check_record(values, fields)
        assert values == {f.name: getattr(result, f.name) for f in fields}
    ok, _, latin, failed = results
    assert ok.error is None and ok.n_main > 0 and ok.markdown and ok.encoding is None
    assert latin.encoding == "windows-1252" and failed.encoding is None
    assert failed.error == "input: html must be str or bytes, not int"
    assert schema.result_values(failed, content_format)[content_format] == ""


def test_a_record_is_the_id_the_result_and_the_url_when_given(results):
    ok, failed = results[0], results[3]
    assert schema.record("a", ok) == {"id": "a", **schema.result_values(ok)}
    record = schema.record("b", failed, "text", error="input: no html field", url="http://x/")
    check_record(record, schema.record_fields("text", url=True))
    # a page naming no canonical URL gets the record's
    assert record == {**schema.result_values(failed, "text"), "id": "b",
                      "error": "input: no html field", "url": "http://x/",
                      "canonical_url": "http://x/"}
    assert schema.metadata(ok) == {f.name: getattr(ok, f.name) for f in schema.RESULT_FIELDS}
    with pytest.raises(ValueError, match=r"^format 'pdf' is not one of markdown, html, text, "
                                         r"json$"):
        schema.record("c", ok, "pdf")


METADATA_PAGE = (
    '<html lang="pt-BR"><head><title>Old | Site</title><link rel="canonical" href="/news/a">'
    '<meta property="og:site_name" content="Site"><script type="application/ld+json">'
    '{"@type": "NewsArticle", "headline": "A headline", "author": [{"name": "Ana Lima"}, '
    '"Rui Sá"], "datePublished": "2024-05-01T08:00:00+02:00", "dateModified": "2024/05/02", '
    '"description": "What it says"}</script><script type="application/ld+json">{"broken"'
    '</script></head><body><h1>A headline</h1><p>' + "Não é uma frase que diz o que a "
    "página diz, mas também não foi feita para ser lida como o conteúdo dos textos. " * 5
    + "</p></body></html>")


def test_the_pages_metadata_reaches_the_result_and_the_record():
    result = Extractor().extract(METADATA_PAGE)
    values = {f.name: getattr(result, f.name) for f in schema.METADATA_FIELDS}
    assert values == {"title": "A headline", "authors": ["Ana Lima", "Rui Sá"],
                      "published": "2024-05-01T08:00:00+02:00", "modified": "2024-05-02",
                      "site_name": "Site", "language": "pt", "canonical_url": "/news/a",
                      "description": "What it says"}
    # resolved against the record's URL where the door has one (WARC inputs)
    record = schema.record("x", result, url="https://site.example/2024/x.html")
    assert record["canonical_url"] == "https://site.example/news/a"
    check_record(record, schema.record_fields(url=True))
    # undeclared: detected from the main content; none read when the engine is told not to
    undeclared = METADATA_PAGE.replace(' lang="pt-BR"', "")
    assert Extractor().extract(undeclared).language == "pt"
    from pulpie_rt.runtime.flow.engine import Engine
    from pulpie_rt.runtime.flow.pages import PageInput

    (without,) = Engine(metadata=False).extract_pages([PageInput(METADATA_PAGE)])
    assert without.markdown == result.markdown
    assert {f.name: getattr(without, f.name) for f in schema.METADATA_FIELDS} == {
        f.name: [] if f.type == "strings" else None for f in schema.METADATA_FIELDS}


def test_the_json_and_arrow_schemas_follow_each_field():
    import pyarrow as pa

    fields = schema.record_fields(url=True)
    document = schema.json_schema(fields)
    assert document["required"] == [f.name for f in fields]
    assert document["additionalProperties"] is False
    assert document["properties"]["n_main"] == {"type": "integer",
                                                "description": "blocks labelled main"}
    assert document["properties"]["error"]["type"] == ["string", "null"]
    assert document["properties"]["id"]["type"] == ["string", "number", "null"]
    assert document["properties"]["authors"]["type"] == "array"
    arrow = {"integer": pa.int64(), "strings": pa.list_(pa.string())}
    assert schema.arrow_schema(fields) == pa.schema(
        [(f.name, arrow.get(f.type, pa.string())) for f in fields])


def test_the_user_guide_shows_the_records_fields():
    guide = (REPO / "docs/user-guide.md").read_text(encoding="utf-8")
    table = schema.fields_table(schema.record_fields(url=True))
    assert table in guide, f"docs/user-guide.md's record table is not the schema's:\n{table}"


PAGE_HTML = ('<html><body><h1>Title</h1><p>See <a href="http://x.org/a">the <b>link</b></a> '
             'here.</p><p><img src="http://x.org/p.png" alt="pic"></p><table><tr><td>one</td>'
             '<td>two</td></tr></table><p>After.</p></body></html>')


def test_content_drops_links_images_and_tables_alike_in_every_format():
    from pulpie_rt.runtime import native

    result = PageResult(html=PAGE_HTML, markdown=native.markdown(PAGE_HTML))
    assert result.content() == result.markdown == (
        "# Title\n\nSee [the **link**](http://x.org/a) here.\n\n![pic](http://x.org/p.png)\n\n"
        "one| two  \n---|---  \n  \nAfter.")
    assert result.content(links=False, images=False, tables=False) == (
        "# Title\n\nSee the **link** here.\n\nAfter.")
    assert result.content("text", tables=False) == "Title\nSee the link here.\nAfter."
    assert result.content("html", links=False, images=False) == (
        "<html><body><h1>Title</h1><p>See the <b>link</b> here.</p><p></p><table><tr><td>one</td>"
        "<td>two</td></tr></table><p>After.</p></body></html>")
    assert result.content("text") == result.text
    failed = PageResult(error="input: html must be str or bytes, not int")
    assert failed.content("text", links=False) == ""
    with pytest.raises(ValueError, match=r"^format 'json' is not one of markdown, html, text$"):
        result.content("json")


def test_an_output_names_what_it_cannot_be_and_what_it_drops():
    assert schema.Output("text", links=False, tables=False).describe() == (
        "text without links, tables")
    assert schema.Output("json").content_format == "markdown"
    assert [f.name for f in schema.result_fields("json")] == [
        "markdown", *(f.name for f in schema.RESULT_FIELDS), "labels"]
    with pytest.raises(ValueError, match=r"^format 'pdf' is not one of markdown, html, text, "
                                         r"json$"):
        schema.Output("pdf")
    with pytest.raises(ValueError, match=r"^images must be true or false, not 'no'$"):
        schema.Output(images="no")


def test_a_content_the_core_cannot_render_is_empty_and_the_error_says_why(monkeypatch):
    """A content the core cannot render (``CoreError``, ``SpecificationRaises``) is written
    empty with ``"markdown: <reason>"`` as the record's error (a page's own error stays); any
    other exception is a bug and is raised."""
    from pulpie_rt.runtime import native

    def raising(exc):
        def content(*args, **kwargs):
            raise exc
        return content

    result = PageResult(page_id="p", html="<p>x</p>", markdown="x", labels={"1": "main"})
    monkeypatch.setattr(result, "content", raising(native.CoreError("cannot render\nthis")))
    values = schema.record("p", result)
    assert (values["markdown"], values["error"], values["n_main"]) == (
        "", "markdown: CoreError: cannot render", 1)
    monkeypatch.setattr(result, "content", raising(native.SpecificationRaises("deep")))
    result.error = "decode: the page's own"
    assert schema.record("p", result)["error"] == "decode: the page's own"
    monkeypatch.setattr(result, "content", raising(KeyError("a bug")))
    with pytest.raises(KeyError):
        schema.record("p", result)
