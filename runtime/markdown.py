"""TEMPORARY shim while our implementation is written: delegates to the reference.

Contract: ``to_markdown(main_html) -> str`` (as pulpie.markdown.to_markdown) and
``to_text(main_html) -> str`` (plain text for users who do not need Markdown).
"""

from __future__ import annotations


def to_markdown(html: str) -> str:
    from pulpie.markdown import to_markdown as _ref  # TEMP

    return _ref(html)


def to_text(html: str) -> str:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    return tree.text(separator="\n").strip() if tree.root is not None else ""
