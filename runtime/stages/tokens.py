"""Tokens: encode blocks with the bundle's ``tokenizer.json`` on the compiled core's byte-level
BPE tokenizer (``core/src/tokenizer``; no transformers, no ``tokenizers`` at run time).

Ids must equal the reference's ``AutoTokenizer.encode(block, add_special_tokens=False)``:

- the reference adds ``<|sep|>`` as an *added special token* when the vocabulary lacks it, so a
  literal ``<|sep|>`` in page text becomes the SEP id there; ``load_tokenizer`` does the same;
- transformers turns off any truncation/padding stored in ``tokenizer.json`` before encoding;
  the core never applies them.

The core's ids are those of ``tokenizers.Tokenizer.encode_batch_fast`` configured that way,
on every block of the dev and train pages for our tokenizers (``python -m
parity.tokenizer_parity``); a ``tokenizer.json`` it does not support (a normalizer,
another model or pre-tokenizer) is refused with a message that names what. The
``tokenizers`` library, configured as above (``library_tokenizer``), is the oracle the parity
command and the tests compare the core with; ``encode_blocks`` takes either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulpie_rt.runtime import native
from pulpie_rt.runtime.constants import SEP_TOKEN

TOKENIZER_FILE = "tokenizer.json"

# a native.CoreTokenizer (what load_tokenizer returns), or the oracle's tokenizers.Tokenizer
Tokenizer = Any


def load_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer of a ``tokenizer.json`` file or a directory holding one; it has
    ``token_to_id(token) -> int | None`` and goes to ``encode_blocks``."""
    path = Path(path)
    if path.is_dir():
        path = path / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer file not found: {path}")
    return native.CoreTokenizer(path, ensure_specials=(SEP_TOKEN,))


def library_tokenizer(path: str | Path) -> Tokenizer:
    """The same tokenizer from the ``tokenizers`` library, set up as the reference sets it up:
    the core's oracle in the parity command and the tests."""
    from tokenizers import AddedToken
    from tokenizers import Tokenizer as LibraryTokenizer

    tokenizer = LibraryTokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    if tokenizer.token_to_id(SEP_TOKEN) is None:
        tokenizer.add_special_tokens(
            [AddedToken(SEP_TOKEN, special=True, normalized=False, lstrip=False, rstrip=False)]
        )
    return tokenizer


def sep_id(tokenizer: Tokenizer) -> int:
    """Id of ``<|sep|>`` (``load_tokenizer`` guarantees it exists)."""
    found = tokenizer.token_to_id(SEP_TOKEN)
    if found is None:
        raise ValueError(f"tokenizer has no {SEP_TOKEN} token")
    return found


def encode_blocks(tokenizer: Tokenizer, blocks: list[str]) -> list[list[int]]:
    """Token ids of each block, no special tokens added, in one call for the page.

    A block holding a lone surrogate (possible in a Python string, never in UTF-8) fails the
    page, as it does in the reference's tokenizer: ``UnicodeEncodeError`` on the core, a
    ``TypeError`` from the ``tokenizers`` library."""
    if not blocks:
        return []
    if isinstance(tokenizer, native.CoreTokenizer):
        return tokenizer.encode(blocks)
    # encode_batch_fast (tokenizers >= 0.21) gives the same ids without computing offsets
    encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
    return [enc.ids for enc in encode(blocks, add_special_tokens=False)]
