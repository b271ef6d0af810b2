"""Export: strict loading, ONNX bundle + verification, refusals, and the engine command on CPU.

The tiny committed checkpoint (``tests/fixtures/tiny-eurobert``) has mixed labels on real pages,
so agreement numbers here are not satisfied by a constant model.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from safetensors.torch import load_file, save_file

from pulpie_rt.cli import main as cli_main
from pulpie_rt.corpus import load_pages
from pulpie_rt.export import checkpoint as ckpt
from pulpie_rt.export.build import export_bundle
from pulpie_rt.export.checkpoint import CheckpointError, load_checkpoint, rope_theta_of
from pulpie_rt.export.engine import (
    EngineMismatchError,
    GpuInfo,
    batch_tokens_for,
    choose_preset,
    detect_gpu,
)
from pulpie_rt.export.profiles import GPU_PRESETS, preset_for_device_name
from pulpie_rt.export.verify import VerifySettings, mixed_batches, pad_batch, select_spread
from pulpie_rt.runtime.model.bundle import load_bundle
from pulpie_rt.runtime.model.hub import HubError, hub_id_for
from pulpie_rt.runtime.stages.blocks import extract_blocks
from pulpie_rt.runtime.stages.chunks import pack_chunks
from pulpie_rt.runtime.stages.simplify import simplify
from pulpie_rt.runtime.stages.tokens import encode_blocks, load_tokenizer

TINY = Path(__file__).parent / "fixtures" / "tiny-eurobert"
# Short chunks keep the tiny model's CPU time low; the full-size test uses long ones.
TINY_VERIFY = VerifySettings(pages=16, max_tokens=1024, max_chunks=10, token_budget=6000)


def _quiet(*_args, **_kwargs) -> None:
    pass


@pytest.fixture(scope="module")
def fp32_bundle(tmp_path_factory) -> Path:
    return export_bundle(TINY, tmp_path_factory.mktemp("b32"), precision="fp32",
                         settings=TINY_VERIFY, log=_quiet)


@pytest.fixture(scope="module")
def reference_pages() -> list[dict]:
    """Real dev pages of moderate size (chunks of a few thousand tokens at most)."""
    pages = [p for p in load_pages("dev") if 5_000 <= len(p["html"]) <= 40_000]
    return pages[:5]


# -- strict loading ---------------------------------------------------------------------------


def test_loading_matches_the_reference_loader_exactly():
    """Bitwise equal logits: the same weights through the same modules, both forward passes in
    this process, so the same kernels on any CPU; a loader that changed a weight, the RoPE
    frequencies or the attention implementation would not be bitwise equal."""
    from pulpie.model_utils import load_model_and_tokenizer

    ours = load_checkpoint(TINY)
    ref_model, ref_tok, ref_sep = load_model_and_tokenizer(str(TINY), torch.device("cpu"))
    assert ours.token_ids == {"bos_id": ref_tok.bos_token_id, "eos_id": ref_tok.eos_token_id,
                              "sep_id": ref_sep, "pad_id": ref_model.config.pad_token_id or 0}
    assert torch.equal(ours.model.model.rotary_emb.inv_freq,
                       ref_model.model.rotary_emb.inv_freq)
    ids = torch.randint(5, 3000, (2, 300), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, 120:] = 0
    with torch.no_grad():
        want = ref_model(input_ids=ids, attention_mask=mask).logits
        got = ours.model(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(want, got)


def test_config_without_theta_uses_the_references_250000(tmp_path):
    """transformers 5 alone would use 10000 here; the reference recomputes with 250000."""
    from pulpie.model_utils import load_model_and_tokenizer

    model_dir = tmp_path / "no-theta"
    shutil.copytree(TINY, model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    del config["rope_theta"], config["rope_parameters"]
    config["auto_map"] = {"AutoModelForTokenClassification": "EuroBERT/EuroBERT-210m--x.Y"}
    (model_dir / "config.json").write_text(json.dumps(config))
    assert rope_theta_of(config) == 250000.0
    ours = load_checkpoint(model_dir)  # auto_map to remote code is ignored
    ref_model, _, _ = load_model_and_tokenizer(str(TINY), torch.device("cpu"))
    assert torch.equal(ours.model.model.rotary_emb.inv_freq,
                       ref_model.model.rotary_emb.inv_freq)


def test_missing_and_extra_tensors_are_refused_with_their_names(tmp_path):
    model_dir = tmp_path / "broken"
    shutil.copytree(TINY, model_dir)
    tensors = load_file(model_dir / "model.safetensors")
    del tensors["classifier.bias"], tensors["model.layers.1.mlp.up_proj.weight"]
    tensors["pooler.dense.weight"] = torch.zeros(2, 2)
    save_file(tensors, model_dir / "model.safetensors")
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(model_dir)
    assert str(err.value) == (
        f"{model_dir.resolve()}: checkpoint tensors do not match EuroBertForTokenClassification; "
        "missing 2: classifier.bias, model.layers.1.mlp.up_proj.weight; "
        "unexpected 1: pooler.dense.weight"
    )


def test_wrong_shape_is_refused(tmp_path):
    model_dir = tmp_path / "reshaped"
    shutil.copytree(TINY, model_dir)
    tensors = load_file(model_dir / "model.safetensors")
    tensors["classifier.weight"] = torch.zeros(3, 64)
    save_file(tensors, model_dir / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"wrong shape 1: classifier.weight \(3, 64\) != "
                                              r"\(2, 64\)"):
        load_checkpoint(model_dir)


def test_hub_name_offline_fails_at_once_with_the_fix(tmp_path, monkeypatch, capsys):
    """Offline: the fix, and not one connection attempted (asserted directly, not by timing)."""
    import socket

    attempts: list = []

    def no_network(*args, **_kwargs):
        attempts.append(args[1:] if args else ())
        raise OSError("network use in an offline test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # empty cache
    rc = cli_main(["export", "small", "--out", str(tmp_path / "out")])
    assert attempts == []
    assert rc == 2
    assert capsys.readouterr().err.strip() == (
        "pulpie-rt export: cannot fetch 'feyninc/pulpie-orange-small' for model 'small': "
        "HF_HUB_OFFLINE is set and it is not in the local cache. On a machine with internet "
        "access run `hf download feyninc/pulpie-orange-small --local-dir DIR`, copy DIR here "
        "and pass DIR as the model instead."
    )


def test_unreachable_hub_fails_fast(tmp_path, monkeypatch):
    """Without HF_HUB_OFFLINE: one short request, then the same message (no long retries)."""
    def unreachable(*_args, **_kwargs):
        raise ConnectionError("network is unreachable")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr("huggingface_hub.model_info", unreachable)
    with pytest.raises(HubError) as err:
        ckpt.resolve_model("orange-large")
    assert str(err.value).startswith(
        "cannot fetch 'feyninc/pulpie-orange-large' for model 'orange-large': the Hugging Face "
        "Hub is unreachable. On a machine with internet access run `hf download "
        "feyninc/pulpie-orange-large --local-dir DIR`")


def test_hub_names():
    """One list of names for the runtime and the exporter."""
    assert hub_id_for("small") == hub_id_for("orange-small") == "feyninc/pulpie-orange-small"
    assert hub_id_for("large") == "feyninc/pulpie-orange-large"
    assert hub_id_for("someone/model") == "someone/model"
    assert hub_id_for("./models/x") is None and hub_id_for("plain-word") is None
    with pytest.raises(CheckpointError, match="neither a checkpoint directory nor a model name"):
        ckpt.resolve_model("no-such-dir")
    with pytest.raises(CheckpointError, match="neither a checkpoint directory"):
        ckpt.resolve_model("./models/no-such-dir")


# -- export + verification --------------------------------------------------------------------


def test_fp32_bundle_is_verified_on_real_chunks(fp32_bundle):
    bundle = load_bundle(fp32_bundle)
    manifest = bundle.manifest
    assert manifest["onnx"] == {"file": "model.onnx", "opset": 18, "precision": "fp32",
                                "inputs": ["input_ids", "attention_mask"], "output": "logits",
                                "external_data": False}
    assert manifest["tokens"] == {"bos_id": 0, "eos_id": 1, "sep_id": 4, "pad_id": 2,
                                  "sep_token": "<|sep|>"}
    assert manifest["labels"] == {"0": "other", "1": "main"}
    assert len(manifest["source"]["weights_sha256"]) == 64
    check = manifest["verification"]
    assert check["passed"] and check["sep_agreement"] == 1.0 and check["label_flips"] == 0
    assert check["max_abs_logit_diff"] <= 1e-3
    assert check["batches"] < check["chunks"]  # padded batches of several chunks
    assert check["chunk_tokens_min"] < check["chunk_tokens_max"] <= 1024
    assert 0.1 < check["main_fraction_pytorch"] < 0.9  # mixed labels: agreement means something
    graph = onnx.load(str(bundle.onnx_path))
    assert [i.name for i in graph.graph.input] == ["input_ids", "attention_mask"]
    assert [o.name for o in graph.graph.output] == ["logits"]
    assert (fp32_bundle / "tokenizer.json").read_bytes() == (TINY / "tokenizer.json").read_bytes()


def _onnx_labels(session, tokenizer, manifest: dict, simplified_html: str) -> dict[str, str]:
    tokens = manifest["tokens"]
    blocks, item_ids = extract_blocks(simplified_html)
    chunks = pack_chunks(encode_blocks(tokenizer, blocks), manifest["max_tokens"],
                         tokens["sep_id"], tokens["bos_id"], tokens["eos_id"])
    predictions = [0] * len(blocks)
    for chunk in chunks:
        ids = np.array([chunk.token_ids], dtype=np.int64)
        logits = session.run(["logits"], {"input_ids": ids,
                                          "attention_mask": np.ones_like(ids)})[0][0]
        for block, label in zip(chunk.block_indices,
                                logits[ids[0] == tokens["sep_id"]].argmax(-1), strict=False):
            predictions[block] = int(label)
    return {item: ("main" if p == 1 else "other")
            for item, p in zip(item_ids, predictions, strict=True) if item is not None}


def test_bundle_labels_equal_the_reference_extractor(fp32_bundle, reference_pages):
    """End to end: our stages + the ONNX graph give pulpie 0.0.2's labels on real pages."""
    from pulpie import Extractor

    reference = Extractor(model=str(TINY), device="cpu")
    bundle = load_bundle(fp32_bundle)
    session = ort.InferenceSession(str(bundle.onnx_path), providers=["CPUExecutionProvider"])
    tokenizer = load_tokenizer(bundle.tokenizer_path)
    counts = {"main": 0, "other": 0}
    for page in reference_pages:
        simplified_html, _ = simplify(page["html"])
        want = reference._classify(simplified_html)
        got = _onnx_labels(session, tokenizer, bundle.manifest, simplified_html)
        assert got == want, page["id"]
        for label in want.values():
            counts[label] += 1
    assert counts["main"] > 0 and counts["other"] > 0, counts


def test_padding_does_not_change_real_token_logits(fp32_bundle):
    session = ort.InferenceSession(str(fp32_bundle / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(5, 3000, size=n)) for n in (37, 300, 5)]
    input_ids, mask = pad_batch(rows, pad_id=2)
    batched = session.run(["logits"], {"input_ids": input_ids, "attention_mask": mask})[0]
    for r, row in enumerate(rows):
        alone = session.run(["logits"], {"input_ids": np.array([row], dtype=np.int64),
                                         "attention_mask": np.ones((1, len(row)), np.int64)})[0]
        np.testing.assert_allclose(batched[r, : len(row)], alone[0], atol=1e-5)


def test_fp16_bundle(tmp_path):
    """fp16 on an 8191-token chunk padded next to a short one: rotary angles at high positions
    are where FP16 goes wrong (97% agreement, |dlogit| 1.9 before they were kept FP32)."""
    long_chunks = VerifySettings(pages=16, max_tokens=8192, max_chunks=2, token_budget=9000,
                                 max_rows=2)
    out = export_bundle(TINY, tmp_path / "b16", precision="fp16", settings=long_chunks,
                        log=_quiet)
    manifest = load_bundle(out).manifest
    assert manifest["onnx"]["precision"] == "fp16"
    check = manifest["verification"]
    assert check["chunk_tokens_max"] > 8000 and check["batches"] == 1
    assert check["passed"] and check["sep_agreement"] >= 0.999
    assert check["max_abs_logit_diff"] < 0.1
    assert check["thresholds"] == {"min_sep_agreement": 0.999, "max_abs_logit_diff": None}
    graph = onnx.load(str(out / "model.onnx"))
    types = {init.data_type for init in graph.graph.initializer
             if init.name.endswith("weight")}
    assert onnx.TensorProto.FLOAT16 in types
    output_type = graph.graph.output[0].type.tensor_type.elem_type
    assert output_type == onnx.TensorProto.FLOAT  # fp32 I/O for the runtime


def test_failed_verification_leaves_no_manifest(tmp_path, monkeypatch):
    from pulpie_rt.export import verify

    monkeypatch.setattr(verify, "FP32_MAX_ABS_DIFF", 0.0)  # nothing can pass this
    monkeypatch.setattr(verify, "FP32_MIN_AGREEMENT", 1.1)
    small = VerifySettings(pages=3, max_tokens=512, max_chunks=3, token_budget=1500)
    with pytest.raises(verify.VerificationError, match="fp32 graph fails verification: "
                                                       "SEP-label agreement 1.000000 < 1.1"):
        export_bundle(TINY, tmp_path / "bad", settings=small, log=_quiet)
    assert not (tmp_path / "bad" / "manifest.json").exists()
    assert (tmp_path / "bad" / "verification-failed.json").is_file()


def test_max_tokens_goes_into_the_manifest_and_sizes_verification(tmp_path):
    out = export_bundle(TINY, tmp_path / "short", max_tokens=300, log=_quiet)
    manifest = load_bundle(out).manifest
    assert manifest["max_tokens"] == 300
    assert 0 < manifest["verification"]["chunk_tokens_max"] <= 300
    with pytest.raises(ValueError, match="max_tokens must be within 16..8192, not 9000"):
        export_bundle(TINY, tmp_path / "long", max_tokens=9000, log=_quiet)


def test_chunk_selection_and_mixed_batches():
    chunks = [[1] * n for n in (10, 500, 20, 8000, 300, 40, 7000)]
    chosen = select_spread(chunks, max_chunks=4, token_budget=9000)
    assert max(map(len, chosen)) == 8000 and sum(map(len, chosen)) <= 9000
    batches = mixed_batches(chunks, max_rows=3, max_batch_tokens=16_384)
    assert sorted(i for b in batches for i in b) == list(range(len(chunks)))
    assert batches[0] == [3, 0]  # the longest chunk padded next to the shortest


# -- engine ------------------------------------------------------------------------------------


def _has_gpu() -> bool:
    return not isinstance(detect_gpu(), str)


@pytest.mark.skipif(_has_gpu(), reason="this machine has an NVIDIA GPU")
def test_engine_without_gpu_exits_at_once_with_the_onnx_fallback(fp32_bundle, capsys):
    """At once: seconds of this process's CPU time, not wall time (a loaded machine stretches
    that); building engines would take minutes of it."""
    start = time.process_time()
    rc = cli_main(["engine", str(fp32_bundle), "--gpu", "l4"])
    assert time.process_time() - start < 5
    assert rc == 3
    assert capsys.readouterr().err.strip() == (
        "pulpie-rt engine: no NVIDIA GPU found (no NVIDIA driver here: libcuda.so.1 cannot be "
        "loaded (libcuda.so.1: cannot open shared object file: No such file or directory)); "
        "TensorRT engines are built on the GPU type that runs them. The ONNX bundle "
        f"{fp32_bundle} is ready for ONNX Runtime."
    )


def test_engine_on_a_missing_bundle_names_it(tmp_path, capsys):
    assert cli_main(["engine", str(tmp_path), "--gpu", "auto"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"pulpie-rt engine: {tmp_path}: not a pulpie-rt bundle (no manifest.json)")


def test_a_preset_for_another_gpu_architecture_is_refused():
    h100 = GpuInfo("NVIDIA H100 80GB HBM3", "9.0", "nvidia-h100-80gb-hbm3-sm90")
    with pytest.raises(EngineMismatchError) as err:
        choose_preset("l4", h100)
    assert str(err.value) == (
        "--gpu l4 is compute capability 8.9 but this machine's GPU is NVIDIA H100 80GB HBM3 "
        "(9.0); an engine only runs on the architecture it was built on: build it on a L4 or "
        "pass --gpu auto")
    assert choose_preset("auto", h100).key == "h100"
    unlisted = choose_preset("auto", GpuInfo("NVIDIA RTX 6000 Ada", "8.9", "x"))
    assert (unlisted.key, unlisted.batch_tokens) == ("auto", GPU_PRESETS["l4"].batch_tokens)


def test_presets_give_a_token_budget_scaled_by_model_width():
    assert preset_for_device_name("NVIDIA H200") is GPU_PRESETS["h200"]
    assert preset_for_device_name("NVIDIA L40S") is None  # whole words: not an L4
    assert batch_tokens_for(GPU_PRESETS["l4"], 768) == 32_768
    assert batch_tokens_for(GPU_PRESETS["l4"], 64) == 32_768  # narrower: never more
    # Orange Large's width (1728) gets a smaller budget, never below 1,024 tokens
    assert batch_tokens_for(GPU_PRESETS["l4"], 1728) == 14_563
    assert batch_tokens_for(GPU_PRESETS["l4"], 10**6) == 1024


def test_fp32_parity_on_an_8192_token_padded_batch(fp32_bundle):
    """The longest chunk the runtime builds (8192 tokens) padded next to a short one."""
    from pulpie_rt.export.verify import verify_bundle

    checkpoint = load_checkpoint(TINY)
    long_chunks = VerifySettings(pages=16, max_tokens=8192, max_chunks=2, token_budget=9000,
                                 max_rows=2, max_batch_tokens=16_384)
    result = verify_bundle(checkpoint.model, fp32_bundle / "model.onnx",
                           fp32_bundle / "tokenizer.json", checkpoint.token_ids, "fp32",
                           long_chunks)
    assert result["chunk_tokens_max"] > 8000 and result["chunk_tokens_min"] < 1000
    assert result["batches"] == 1 and result["sep_agreement"] == 1.0
    assert result["max_abs_logit_diff"] <= 1e-3


@pytest.mark.slow
def test_full_size_orange_small_shaped_export(tmp_path):
    """EuroBERT-210m's shape (768 hidden, 12 layers, 12 heads, 3072 MLP, 128256 vocab), random
    weights: the export path at the real size, fp32 parity on real chunks. Runs in CI (~3 min,
    ~4.5 GB RAM); chunks are kept <= 1024 tokens for CPU time, the tiny test covers 8192."""
    from pulpie_rt.export.tiny import ORANGE_SMALL_SHAPE, build_random_checkpoint

    model_dir = build_random_checkpoint(tmp_path / "orange-small-shaped", TINY)
    settings = VerifySettings(pages=4, max_tokens=1024, max_chunks=5, token_budget=2500)
    out = export_bundle(model_dir, tmp_path / "bundle", settings=settings, log=_quiet)
    manifest = load_bundle(out).manifest
    assert {k: manifest["model"][k] for k in ORANGE_SMALL_SHAPE} == ORANGE_SMALL_SHAPE
    assert (out / "model.onnx").stat().st_size > 800_000_000
    check = manifest["verification"]
    assert check["passed"] and check["sep_agreement"] == 1.0
    assert check["max_abs_logit_diff"] <= 1e-3
    assert 0.1 < check["main_fraction_pytorch"] < 0.9


def test_large_models_get_external_data(tmp_path, monkeypatch):
    """Orange Large (8.4 GB fp32) exceeds protobuf's 2 GiB: weights go to model.onnx.data."""
    from pulpie_rt.export import to_onnx

    monkeypatch.setattr(to_onnx, "EXTERNAL_DATA_THRESHOLD", 0)
    small = VerifySettings(pages=3, max_tokens=512, max_chunks=4, token_budget=1500)
    out = export_bundle(TINY, tmp_path / "ext", settings=small, log=_quiet)
    bundle = load_bundle(out)
    assert bundle.manifest["onnx"]["external_data"] is True
    assert bundle.manifest["verification"]["sep_agreement"] == 1.0
    assert (out / "model.onnx.data").stat().st_size > 1_000_000
    assert (out / "model.onnx").stat().st_size < 200_000
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "model.onnx", "model.onnx.data", "tokenizer.json"]


@pytest.mark.gpu
def test_engine_build_on_a_gpu(request):
    """Only on a machine with an NVIDIA GPU and onnxruntime-gpu (bench/gpu_check.sh runs the
    engine path itself): the engines are built once, then found."""
    if not _has_gpu():
        pytest.skip("no NVIDIA GPU")
    fp32_bundle = request.getfixturevalue("fp32_bundle")  # exported only when it will be used
    from pulpie_rt.export.engine import run_engine_command

    entry = run_engine_command(fp32_bundle, gpu="auto", log=_quiet)
    assert len(entry["profiles"]) == 7 and entry["precision"] == "fp16"
    assert any("built into" in note for note in entry["notes"])
    again = run_engine_command(fp32_bundle, gpu="auto", log=_quiet)
    assert any("loaded from" in note for note in again["notes"])
