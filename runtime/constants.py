"""The model-input format every layer shares: one definition of each name and pattern.

Blocks of simplified HTML carry an ``_item_id`` attribute (``ITEM_ID_ATTR``); ``ITEM_ID_RE``
finds them in serialized HTML. Each block's tokens are followed by ``SEP_TOKEN``; the logit at
each SEP labels its block. ``RUN_WRAPPER_TAG`` wraps a run of inline content that simplify made
into a block of its own (MinerU-HTML's name for it).
"""

from __future__ import annotations

import re

ITEM_ID_ATTR = "_item_id"
ITEM_ID_RE = re.compile(r'_item_id="(\d+)"')
SEP_TOKEN = "<|sep|>"
RUN_WRAPPER_TAG = "cc-alg-uc-text"
