"""TEMPORARY shim while the selectolax implementation is written: delegates to the reference.

Contract: ``simplify(html, cutoff_length=500) -> (simplified_html, map_html)``.
"""

from __future__ import annotations


def simplify(html: str, cutoff_length: int = 500) -> tuple[str, str]:
    from pulpie.simplify import simplify as _ref  # TEMP: replaced by our implementation

    return _ref(html, cutoff_length=cutoff_length)
