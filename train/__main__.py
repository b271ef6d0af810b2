"""Rebuild the embedded default model from the train corpus, in one seeded command.

    python -m train [--out pulpie_rt/default_model] [--work build/default-model]
                              [--fast-only]
    make default-model

Steps: blocks + rule labels of the train pages -> tokenizer -> chunks -> training -> Hugging
Face checkpoint (``WORK/checkpoint``) -> verified fp32 ONNX bundle (``WORK/bundle``) -> block
rescorer (``train.rescorer``) -> decoding calibrated on held-out pages (``train.calibrate``):
the ``accurate`` profile -> the ``fast`` profile's two-stage rescorer, calibrated on the train
pages (``train.fast``) -> word-F1 of each profile on the dev pages with ground truth -> the
bundle and its model card into ``--out``.

``--fast-only`` retrains only the fast profile (minutes instead of an hour): the transformer,
its tokenizer and the accurate profile's rescorer and decoding are taken from ``--out`` as
they are; the fast profile's files come out the same as a whole run's (same seeded recipe,
same train pages, no dependence on the transformer).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from pulpie_rt.runtime.model.bundle import edit_manifest, read_manifest
from pulpie_rt.runtime.stages.features import FEATURES_VERSION
from train.calibrate import choose_decoding
from train.card import model_card
from train.fit import (
    Recipe,
    build_chunks,
    build_tokenizer,
    save_checkpoint,
    train_model,
)
from train.rescorer import RESCORER_NAME, write_rescorer

BUNDLE_FILES = ("model.onnx", "tokenizer.json", "manifest.json")
PROFILE_NAMES = ("fast", "accurate")


def evaluate_profiles(bundle: Path, threads: int) -> dict[str, dict]:
    """Each profile's scores on the dev pages with ground truth, and its pages per CPU-second
    (user + system time of its own process, model load excluded: ``eval.systems``)."""
    from eval.metrics import score_pages
    from eval.pages import groundtruth_pages
    from eval.systems import run_in_child, run_ours

    pages = groundtruth_pages()
    references = {p["id"]: p["reference"] for p in pages}
    out = {}
    for profile in PROFILE_NAMES:
        ours = run_in_child(run_ours, pages, str(bundle), threads, 32, profile)
        scores = score_pages(ours["texts"], references, per_page=True)
        scores["errors"] = len(ours["errors"])
        scores["pages_per_cpu_s"] = len(pages) / ours["tree_cpu_s"]
        out[profile] = scores
    return out


def set_profiles(bundle: Path, fast: dict, default_profile: str) -> None:
    """The manifest's ``profiles``: ``accurate`` = the manifest's own ``decoding`` and
    ``rescorer`` with the transformer (they stay at the top level too, for readers without
    profiles: the compiled core's C library), ``fast`` = ``fast``'s without it, segmenting
    pages without removing hidden elements when it was trained so (``keep_hidden``), and
    without the ``noscript`` elements that hold no block when it was trained so
    (``drop_noscript``)."""
    fast_profile = {"transformer": False, "decoding": fast["decoding"],
                    "rescorer": fast["rescorer"]}
    if fast.get("keep_hidden"):
        fast_profile["keep_hidden"] = True
    if fast.get("drop_noscript"):
        fast_profile["drop_noscript"] = True

    def with_profiles(manifest: dict) -> None:
        manifest["profiles"] = {
            "fast": fast_profile,
            "accurate": {"transformer": True, "decoding": manifest.get("decoding"),
                         "rescorer": manifest.get("rescorer")},
        }
        manifest["default_profile"] = default_profile

    edit_manifest(bundle, with_profiles)


def count_parameters(checkpoint: Path) -> int:
    from safetensors import safe_open

    total = 0
    for path in sorted(checkpoint.glob("*.safetensors")):
        with safe_open(str(path), "np") as weights:
            total += sum(int(np.prod(weights.get_slice(k).get_shape())) for k in weights.keys())
    return total


def set_decoding(bundle: Path, keep_best_block: bool, main_margin: float | None = None,
                 margin_weight: float | None = None) -> None:
    """The bundle's ``decoding`` and ``rescorer`` entries (see
    ``pulpie_rt.runtime.model.bundle``): a small model is unsure on some pages, and an empty
    result is the worst answer there; the threshold and the rescorer's margin weight are
    calibrated (``train.calibrate``)."""
    def with_decoding(manifest: dict) -> None:
        manifest["decoding"] = {"keep_best_block": keep_best_block}
        if main_margin is not None:
            manifest["decoding"]["main_margin"] = main_margin
        manifest.pop("rescorer", None)
        if margin_weight is not None:
            manifest["rescorer"] = {"file": RESCORER_NAME, "features": FEATURES_VERSION,
                                    "margin_weight": margin_weight}

    edit_manifest(bundle, with_decoding)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("pulpie_rt") / "default_model",
                        help="where the bundle and its model card go")
    parser.add_argument("--work", type=Path, default=Path("build") / "default-model",
                        help="checkpoint, bundle and log before they are copied to --out")
    parser.add_argument("--recipe", type=json.loads, default={},
                        help='JSON overrides of the recipe, e.g. \'{"epochs": 0.1}\'')
    parser.add_argument("--reuse-checkpoint", action="store_true",
                        help="skip training: export and evaluate WORK/checkpoint again")
    parser.add_argument("--fast-only", action="store_true",
                        help="retrain only the fast profile; the transformer and the accurate "
                             "profile are taken from --out as they are")
    parser.add_argument("--reuse-first-phase", action="store_true",
                        help="start from WORK/first-phase (saved by an earlier run of the same "
                             "recipe) and run only the second phase")
    args = parser.parse_args(argv)
    recipe = replace(Recipe(), **args.recipe)

    from pulpie_rt.export.build import export_bundle
    from train.data import prepare_pages

    started = time.perf_counter()
    work = args.work
    checkpoint = work / "checkpoint"
    if checkpoint.exists() and not args.reuse_checkpoint:
        shutil.rmtree(checkpoint)
    work.mkdir(parents=True, exist_ok=True)
    log_file = (work / "train.log").open("a" if args.reuse_checkpoint else "w", encoding="utf-8")

    def log(message: str) -> None:
        line = f"[{time.perf_counter() - started:7.1f}s] {message}"
        print(line, flush=True)
        log_file.write(line + "\n")
        log_file.flush()

    if args.fast_only:
        return train_fast_only(args, recipe, work, log, started)
    if args.reuse_checkpoint:
        recipe = Recipe(**json.loads((checkpoint / "recipe.json").read_text(encoding="utf-8")))
        log(f"reusing {checkpoint} (recipe: {json.dumps(asdict(recipe))})")
        previous = json.loads((work / "results.json").read_text(encoding="utf-8")) \
            if (work / "results.json").is_file() else {}
        train_minutes = previous.get("train_minutes")
    else:
        log(f"recipe: {json.dumps(asdict(recipe))}")
    records = prepare_pages(recipe.corpus)
    n_blocks = sum(len(r["blocks"]) for r in records)
    data = {"pages": len(records), "blocks": n_blocks,
            "main_share": sum(sum(r["labels"] or []) for r in records) / max(n_blocks, 1)}
    log(f"{len(records)} pages, {n_blocks} blocks ({data['main_share']:.1%} main)")
    if not args.reuse_checkpoint:
        tokenizer = build_tokenizer(records, recipe, checkpoint)
        chunks = build_chunks(records, tokenizer, recipe.max_tokens)
        log(f"tokenizer: {tokenizer.get_vocab_size()} tokens; {len(chunks)} chunks, "
            f"{sum(len(c.token_ids) for c in chunks)} tokens")
        train_started = time.perf_counter()
        first_phase = None
        if args.reuse_first_phase:
            from transformers import EuroBertForTokenClassification

            first_phase = EuroBertForTokenClassification.from_pretrained(
                work / "first-phase", attn_implementation="sdpa")
            log(f"first phase: reusing {work / 'first-phase'}")
        model = train_model(chunks, recipe, tokenizer.get_vocab_size(), log=log,
                            first_phase=first_phase,
                            after_first_phase=lambda m: m.save_pretrained(work / "first-phase"))
        train_minutes = round((time.perf_counter() - train_started) / 60, 1)
        if args.reuse_first_phase:
            train_minutes = None  # only the second phase ran here
        save_checkpoint(model, recipe, checkpoint)
    data["parameters"] = count_parameters(checkpoint)

    bundle = work / "bundle"
    if bundle.exists():
        shutil.rmtree(bundle)
    export_bundle(checkpoint, bundle, precision="fp32", verify=True,
                  max_tokens=recipe.max_tokens, log=log)
    rescorer = None
    if recipe.rescorer_rounds:
        rescorer = write_rescorer(bundle, recipe, log=log)
        set_decoding(bundle, keep_best_block=True, margin_weight=0.0)  # read by calibration
    margin_weight, main_margin, calibration = choose_decoding(bundle, recipe.threads, log=log)
    set_decoding(bundle, keep_best_block=True, main_margin=main_margin,
                 margin_weight=margin_weight)
    log(f"decoding: main_margin {main_margin:+.2f}, keep_best_block"
        + ("" if margin_weight is None else f", rescorer margin_weight {margin_weight:.2f}"))
    results = {"recipe": asdict(recipe), "data": data, "parameters": data.pop("parameters"),
               "decoding": {"main_margin": main_margin, "keep_best_block": True,
                            "margin_weight": margin_weight, "calibration_f1": calibration},
               "rescorer": rescorer,
               "train_minutes": train_minutes}
    return finish(args, recipe, work, bundle, results, log, started)


def train_fast_only(args, recipe: Recipe, work: Path, log, started: float) -> int:
    """``--fast-only``: the shipped bundle's transformer and accurate profile, a new fast
    profile."""
    from train.fast import FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME

    bundle = work / "bundle"
    if bundle.exists():
        shutil.rmtree(bundle)
    bundle.mkdir(parents=True)
    for name in BUNDLE_FILES + (RESCORER_NAME,):
        shutil.copyfile(args.out / name, bundle / name)

    def without_profiles(manifest: dict) -> None:
        for key in ("profiles", "default_profile"):
            manifest.pop(key, None)

    edit_manifest(bundle, without_profiles)
    previous = json.loads((args.out / "results.json").read_text(encoding="utf-8"))
    kept = {k: previous[k] for k in ("data", "parameters", "decoding", "rescorer",
                                     "train_minutes")}
    # every fast profile setting is named fast_*: the rest must be the shipped model's
    transformer_recipe = {k: v for k, v in previous["recipe"].items()
                          if not k.startswith("fast_") and k != "default_profile"}
    if {k: v for k, v in asdict(recipe).items() if k in transformer_recipe} != transformer_recipe:
        raise SystemExit("--fast-only: the recipe differs from the shipped model's in its "
                         "transformer or accurate rescorer settings: run the whole command")
    log(f"fast only: transformer and accurate profile from {args.out} "
        f"({', '.join(n for n in (FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME))} retrained)")
    return finish(args, recipe, work, bundle, {"recipe": asdict(recipe), **kept}, log, started)


def finish(args, recipe: Recipe, work: Path, bundle: Path, results: dict, log,
           started: float) -> int:
    """The fast profile, each profile's figures on the dev pages with ground truth, and the
    bundle, results.json and model card into ``--out``."""
    from train.fast import FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME, write_fast_rescorer

    fast = write_fast_rescorer(bundle, recipe, log=log)
    set_profiles(bundle, fast, recipe.default_profile)
    results["fast"] = {k: v for k, v in fast.items() if k not in ("rescorer", "decoding")}
    results["fast"]["decoding"] = fast["decoding"]
    results["default_profile"] = recipe.default_profile
    profiles = evaluate_profiles(bundle, recipe.threads)
    for name, scores in profiles.items():
        log(f"dev pages with ground truth, {name}: word F1 {scores['f1']:.4f} "
            f"(P {scores['precision']:.4f}, R {scores['recall']:.4f}), ROUGE-5 F1 "
            f"{scores['rouge5_f1']:.4f}, {scores['empty']} empty, {scores['errors']} errors, "
            f"{scores['pages_per_cpu_s']:.1f} pages per CPU-second")
    results["dev_groundtruth"] = {
        name: {k: v for k, v in scores.items() if k not in ("per_page", "micro")}
        for name, scores in profiles.items()}
    results["total_minutes"] = round((time.perf_counter() - started) / 60, 1)
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    files = BUNDLE_FILES + ((RESCORER_NAME,) if results["rescorer"] else ()) + (
        FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME)
    (out / RESCORER_NAME).unlink(missing_ok=True)
    for name in files:
        shutil.copyfile(bundle / name, out / name)
    shutil.copyfile(work / "results.json", out / "results.json")
    size = sum((out / n).stat().st_size for n in files)
    (out / "README.md").write_text(model_card(results, read_manifest(out), size),
                                   encoding="utf-8")
    log(f"bundle and model card -> {out} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
