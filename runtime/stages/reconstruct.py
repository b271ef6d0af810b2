"""Main-content HTML from ``map_html`` and block labels.

Contract (the reference's ``pulpie.reconstruct.extract_main_html``): keep every element
labelled ``"main"`` with its descendants and ancestors, recall ``<br>`` tags next to kept
content, drop everything else (an element's tail text goes with it), unwrap the
``<cc-alg-uc-text>`` run wrappers, and return the result as libxml2 writes HTML, with entities
decoded inside http(s)/ftp/``//`` ``href``/``src`` values.

The reference re-parses ``map_html`` with libxml2 (blank text removed, comments removed) and
serializes with libxml2; the models' users compare against that output byte for byte. The
stage runs in the compiled core (``core/``, through ``native``), which builds libxml2's tree
of ``map_html`` and writes the kept part as libxml2 does, without recursion. Its readable
specification, the Python implementation it is tested against, is
``tests/spec/reconstruct_spec.py``.
"""

from __future__ import annotations

from pulpie_rt.runtime import native

__all__ = ["extract_main_html"]


def extract_main_html(map_html: str, labels: dict[str, str]) -> str:
    """Keep the main-labelled content of ``map_html``; the reference's exact output.

    Args:
        map_html: the page with ``_item_id`` markers, as ``simplify`` returns it (lxml's
            serialization and lexbor's re-serialization of it both work).
        labels: ``{item_id: "main" | "other"}``; ids absent from the page are ignored.

    Raises ``TypeError`` when ``map_html`` is not a string, ``ValueError`` when the core cannot
    take it (a lone surrogate in it, say).
    """
    if not map_html:
        return ""
    if not isinstance(map_html, str):
        raise TypeError(f"map_html must be str, not {type(map_html).__name__}")
    try:
        return native.extract_main_html(map_html, labels)
    except native.CoreError as exc:
        raise ValueError(str(exc)) from exc
