"""The committed tiny checkpoint: ``build_tiny_checkpoint`` reproduces it and it is usable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file

from pulpie_rt.export.tiny import SPECIAL_TOKENS, build_tiny_checkpoint

FIXTURE = Path(__file__).parent / "fixtures" / "tiny-eurobert"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory) -> Path:
    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny"), seed=0)


def test_fixture_is_small_and_complete():
    names = {p.name for p in FIXTURE.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
            "special_tokens_map.json"} <= names
    assert sum(p.stat().st_size for p in FIXTURE.iterdir()) < 3_000_000


# Drawn from the seeded generator alone (``torch.nn.init.normal_``; norms are ones): torch runs
# ``normal_`` on its AVX2 kernel on AVX2 and AVX-512 CPUs alike (it is registered without an
# AVX-512 variant), so these bits are the same on either. Only torch's scalar fallback, on a CPU
# without AVX2, draws them differently (up to 4e-7 here with ATEN_CPU_CAPABILITY=default).
SAME_BITS_ON = ("AVX2", "AVX512")
SCALAR_FALLBACK_ATOL = 1e-6
# classifier.bias is +-half the median SEP margin of a forward pass over real pages, whose
# matmuls and reductions run ISA-specific kernels (MKL, ATen): measured here 6e-8 off with MKL's
# compatible code path (MKL_CBWR=COMPATIBLE), 2e-6 with torch's scalar kernels as well; a wrong
# calibration is off by 1e-2 or more (the mean instead of the median: 1.0e-2; 13 calibration
# pages instead of 12: 1.1e-2; no shift: 0.54).
BIAS_ATOL = 1e-5


def test_rebuild_gives_identical_weights_and_tokenizer(rebuilt):
    """``make tiny`` reproduces the committed fixture.

    Per machine type: on the same machine every tensor is bitwise identical; across AVX2 and
    AVX-512 CPUs the generator-drawn weights are bitwise identical and ``classifier.bias`` agrees
    within 1e-5 (it comes out of a forward pass), its two entries exact opposites everywhere; the
    tokenizer files are byte-identical everywhere (integer BPE merges).
    """
    committed = load_file(FIXTURE / "model.safetensors")
    fresh = load_file(rebuilt / "model.safetensors")
    assert committed.keys() == fresh.keys()
    exact = torch.backends.cpu.get_cpu_capability() in SAME_BITS_ON
    for name, tensor in committed.items():
        if name == "classifier.bias":
            continue
        if exact:
            assert torch.equal(tensor, fresh[name]), name
        else:
            torch.testing.assert_close(fresh[name], tensor, rtol=0, atol=SCALAR_FALLBACK_ATOL)
    bias, fresh_bias = committed["classifier.bias"], fresh["classifier.bias"]
    assert fresh_bias[0].item() == -fresh_bias[1].item() and abs(fresh_bias[0].item()) > 0.1
    torch.testing.assert_close(fresh_bias, bias, rtol=0, atol=BIAS_ATOL)
    assert (FIXTURE / "tokenizer.json").read_bytes() == (rebuilt / "tokenizer.json").read_bytes()
    assert json.loads((FIXTURE / "config.json").read_text()) == json.loads(
        (rebuilt / "config.json").read_text()
    )


def test_config_rope_theta_agrees_for_both_loaders():
    raw = json.loads((FIXTURE / "config.json").read_text())
    # the reference's fix_rotary_embeddings reads the top-level value, transformers 5 the dict
    assert raw["rope_theta"] == raw["rope_parameters"]["rope_theta"] == 250000.0
    config = transformers.AutoConfig.from_pretrained(FIXTURE)
    assert config.rope_parameters["rope_theta"] == 250000.0


def test_special_tokens_and_mixed_labels(rebuilt):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(rebuilt / "tokenizer.json"))
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    # a <|sep|> in text stays one token (the runtime finds block ends by it)
    assert tok.encode("<p>a</p><|sep|>", add_special_tokens=False).ids[-1] == 4

    model = transformers.AutoModelForTokenClassification.from_pretrained(rebuilt).eval()
    text = "<p _item_id=\"1\">Breaking news: the council voted on Tuesday.</p>"
    ids = [0]
    for i in range(40):
        ids += tok.encode(text.replace('"1"', f'"{i}"') + " x" * (i % 7),
                          add_special_tokens=False).ids + [4]
    ids.append(1)
    input_ids = torch.tensor([ids])
    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).logits[0]
    labels = logits[input_ids[0] == 4].argmax(-1)
    assert logits.shape == (len(ids), 2)
    assert torch.isfinite(logits).all()
    assert 0 < int(labels.sum()) < len(labels)  # both labels occur
