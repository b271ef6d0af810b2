"""TEMPORARY shim while the selectolax implementation is written: delegates to the reference.

Contract: ``extract_main_html(map_html, labels: {item_id: "main"|"other"}) -> main_html``.
"""

from __future__ import annotations


def extract_main_html(map_html: str, labels: dict[str, str]) -> str:
    from pulpie.reconstruct import extract_main_html as _ref  # TEMP

    return _ref(map_html, labels)
