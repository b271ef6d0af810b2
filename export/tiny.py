"""A tiny, seeded, random EuroBERT token classifier for tests (``make tiny``).

It has the real checkpoint's *shape of interface*: a native ``EuroBertForTokenClassification``
(2 labels, RoPE theta 250000, RMSNorm, SiLU MLP) and a byte-level BPE tokenizer with the real
special tokens, trained on dev-corpus HTML. Its weights are random, so its labels mean nothing;
the classifier bias is shifted so that SEP labels on real pages are mixed main/other - an
all-"other" model would make every agreement check pass trivially.

The committed copy lives in ``tests/fixtures/tiny-eurobert/`` so golden files recorded from the
reference with it stay valid; ``build_tiny_checkpoint`` rebuilds it (same seed, same corpus ->
same weights).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pulpie_rt.corpus import load_pages

BOS_TOKEN = "<|begin_of_text|>"
EOS_TOKEN = "<|end_of_text|>"
PAD_TOKEN = "<|pad|>"
MASK_TOKEN = "<|mask|>"
SEP_TOKEN = "<|sep|>"
# Ids 0..4, in this order.
SPECIAL_TOKENS = [BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, MASK_TOKEN, SEP_TOKEN]

ROPE_THETA = 250000.0
TINY_SHAPE = {
    "vocab_size": 3072,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
}
# Wider-than-default init: with the default 0.02 every SEP position looks alike after two
# layers and the labels would not depend on the page.
TINY_INIT_STD = 0.2
TRAIN_PAGES = 40
TRAIN_CHARS_PER_PAGE = 60_000
CALIBRATION_PAGES = 12

# Block-level tags: a cheap, implementation-independent split of raw HTML into "blocks" for
# calibrating the bias (the real block splitter may change; the fixture must not).
_BLOCK_SPLIT = re.compile(r"(?=<(?:p|div|li|h[1-6]|td|tr|section|article|ul|nav|footer)\b)", re.I)


def _training_text(pages: list[dict]) -> list[str]:
    return [page["html"][:TRAIN_CHARS_PER_PAGE] for page in pages]


def train_tokenizer(texts: list[str], vocab_size: int):
    """Byte-level BPE with the EuroBERT special tokens at ids 0..4."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return tokenizer


def eurobert_config(shape: dict, init_std: float):
    """A ``EuroBertConfig`` for a 2-label token classifier with the real special-token ids and
    RoPE theta; ``shape``: vocab_size, hidden_size, intermediate_size, num_hidden_layers,
    num_attention_heads."""
    from transformers import EuroBertConfig

    return EuroBertConfig(
        **shape,
        num_labels=2,
        id2label={0: "other", 1: "main"},
        label2id={"other": 0, "main": 1},
        rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA},
        bos_token_id=SPECIAL_TOKENS.index(BOS_TOKEN),
        eos_token_id=SPECIAL_TOKENS.index(EOS_TOKEN),
        pad_token_id=SPECIAL_TOKENS.index(PAD_TOKEN),
        mask_token_id=SPECIAL_TOKENS.index(MASK_TOKEN),
        max_position_embeddings=8192,
        initializer_range=init_std,
        architectures=["EuroBertForTokenClassification"],
    )


def tiny_config(vocab_size: int):
    return eurobert_config({**TINY_SHAPE, "vocab_size": vocab_size}, TINY_INIT_STD)


def _calibration_chunks(tokenizer, pages: list[dict], max_tokens: int = 1024) -> list[list[int]]:
    bos, eos, sep = (SPECIAL_TOKENS.index(t) for t in (BOS_TOKEN, EOS_TOKEN, SEP_TOKEN))
    chunks = []
    for page in pages:
        pieces = [p.strip() for p in _BLOCK_SPLIT.split(page["html"][:TRAIN_CHARS_PER_PAGE])]
        ids: list[int] = [bos]
        for piece in pieces:
            if not piece:
                continue
            toks = tokenizer.encode(piece, add_special_tokens=False).ids[:200]
            if len(ids) + len(toks) + 2 > max_tokens:
                chunks.append(ids + [eos])
                ids = [bos]
            ids += toks + [sep]
        if len(ids) > 1:
            chunks.append(ids + [eos])
    return chunks


def _sep_margins(model, chunks: list[list[int]], sep_id: int):
    """logit(main) - logit(other) at every SEP position of the calibration chunks."""
    import torch

    margins = []
    with torch.no_grad():
        for ids in chunks:
            input_ids = torch.tensor([ids])
            logits = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).logits[0]
            at_sep = logits[input_ids[0] == sep_id]
            margins.append(at_sep[:, 1] - at_sep[:, 0])
    return torch.cat(margins)


def _tokenizer_config(max_tokens: int = 8192) -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "mask_token": MASK_TOKEN,
        "additional_special_tokens": [SEP_TOKEN],
        "model_max_length": max_tokens,
        "clean_up_tokenization_spaces": False,
        "add_bos_token": False,
        "add_eos_token": False,
    }


def save_checkpoint_files(model, out: Path) -> None:
    """``model.save_pretrained`` as the export reads it back."""
    model.save_pretrained(out, safe_serialization=True)
    # The published checkpoints' config.json carries a top-level rope_theta (read by the
    # reference's fix_rotary_embeddings); transformers 5 reads rope_parameters. Keep both equal.
    config_path = out / "config.json"
    raw = json.loads(config_path.read_text(encoding="utf-8"))
    raw["rope_theta"] = ROPE_THETA
    raw.pop("transformers_version", None)
    config_path.write_text(json.dumps(raw, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "generation_config.json").unlink(missing_ok=True)


def write_tokenizer_files(tokenizer, out: Path, max_tokens: int = 8192) -> None:
    """``tokenizer.json`` with the transformers side files (config, special-token map)."""
    tokenizer.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(_tokenizer_config(max_tokens), indent=2) + "\n", encoding="utf-8"
    )
    special_map = {
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "mask_token": MASK_TOKEN,
        "additional_special_tokens": [SEP_TOKEN],
    }
    (out / "special_tokens_map.json").write_text(
        json.dumps(special_map, indent=2) + "\n", encoding="utf-8"
    )


def build_tiny_checkpoint(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny random EuroBERT token classifier + tokenizer to ``out_dir``; return it."""
    import torch
    from transformers import EuroBertForTokenClassification

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pages = load_pages("dev", limit=TRAIN_PAGES)

    tokenizer = train_tokenizer(_training_text(pages), TINY_SHAPE["vocab_size"])
    vocab_size = tokenizer.get_vocab_size()

    torch.manual_seed(seed)
    config = tiny_config(vocab_size)
    model = EuroBertForTokenClassification(config).eval()

    # Shift the bias so that half of the calibration SEPs land on each side: labels on real
    # pages are then mixed and label agreement between runtimes is a real test.
    sep_id = SPECIAL_TOKENS.index(SEP_TOKEN)
    margins = _sep_margins(model, _calibration_chunks(tokenizer, pages[:CALIBRATION_PAGES]), sep_id)
    with torch.no_grad():
        shift = float(margins.median())
        model.classifier.bias[1] -= shift / 2
        model.classifier.bias[0] += shift / 2

    save_checkpoint_files(model, out)
    write_tokenizer_files(tokenizer, out)
    return out


# EuroBERT-210m (Orange Small's base): the published config's values.
ORANGE_SMALL_SHAPE = {
    "vocab_size": 128256,
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
}


def build_random_checkpoint(out_dir: str | Path, tokenizer_dir: str | Path,
                            shape: dict | None = None, seed: int = 0,
                            init_std: float = 0.05) -> Path:
    """A seeded random EuroBERT of ``shape`` (default Orange Small's) with the tokenizer files
    of ``tokenizer_dir`` (e.g. the tiny fixture), bias-calibrated like the tiny one.

    Token ids beyond the tokenizer's vocabulary are simply never used; what matters for export
    tests is the graph's size and shape (847 MB of fp32 weights at Orange Small's shape).
    """
    import shutil

    import torch
    from tokenizers import Tokenizer
    from transformers import EuroBertForTokenClassification

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(Path(tokenizer_dir) / name, out / name)
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))

    torch.manual_seed(seed)
    config = tiny_config(TINY_SHAPE["vocab_size"])
    for key, value in (shape or ORANGE_SMALL_SHAPE).items():
        setattr(config, key, value)
    config.head_dim = config.hidden_size // config.num_attention_heads
    config.num_key_value_heads = config.num_attention_heads
    config.initializer_range = init_std
    model = EuroBertForTokenClassification(config).eval()
    pages = load_pages("dev", limit=3)
    chunks = _calibration_chunks(tokenizer, pages, max_tokens=512)[:3]
    margins = _sep_margins(model, chunks, SPECIAL_TOKENS.index(SEP_TOKEN))
    with torch.no_grad():
        shift = float(margins.median())
        model.classifier.bias[1] -= shift / 2
        model.classifier.bias[0] += shift / 2
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").unlink(missing_ok=True)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/fixtures/tiny-eurobert")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(build_tiny_checkpoint(args.out, seed=args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def export_tiny_bundle(out: Path) -> Path:
    """The committed tiny checkpoint (``tests/fixtures/tiny-eurobert``) exported as a bundle
    into ``out`` (``pulpie-rt export``, unverified: the commands that run it compare
    behaviour, not the export)."""
    import subprocess
    import sys

    checkpoint = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tiny-eurobert"
    subprocess.run([sys.executable, "-m", "pulpie_rt.cli", "export", str(checkpoint), "--out",
                    str(out), "--no-verify"], check=True, capture_output=True)
    return out
