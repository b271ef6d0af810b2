"""A bundle whose fast rescorer keeps only the first K bag members of each stage, and of each
member only its first R trees.

``train.fast.fit_stage`` averages ``recipe.fast_bag`` LightGBM ensembles of
``recipe.rescorer_rounds`` trees (``average_boosters``: member after member, each leaf value
divided by the bag's size) into one ``TreeEnsembleClassifier``. Keeping the first K members
and multiplying their leaf values by bag / K gives exactly the mean of those K members' raw
scores: fewer trees to evaluate per block, the same kind of model. Boosting adds its rounds,
so a member's first R trees are that member as if trained for R rounds: keeping them leaves
the mean of the K members' first R rounds. Every other file of the bundle is copied
unchanged; ``results.json`` records the bag and rounds kept and where they came from, so the
model card and anything reading ``fast.bag`` or ``fast.trees_per_stage`` describe what is
shipped.

A cut is another model, so its threshold is chosen as the training chooses a bag's: the best
mean word F1 of its own out-of-fold scores on the train pages, which ``python -m
train.cut_oof`` measures (``--threshold-from`` its JSON; the manifest's ``main_margin`` and
``results.json``'s ``fast.calibration_f1`` become the cut's, ``fast.truncated.threshold`` says
how and keeps the bag's). Without it the bag's threshold stays.

    python -m train.truncate_bag MODEL --keep K [--rounds R] --out DIR
    python -m train.cut_oof MODEL --cuts 2x150/2x75 --out OOF.json
    python -m train.truncate_bag MODEL --cut 2x150/2x75 --threshold-from OOF.json --out DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from train.fast import FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME

STAGE_FILES = (FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME)
RESULTS_NAME = "results.json"


class TruncateError(ValueError):
    pass


def _values(attribute):
    import onnx

    return {onnx.AttributeProto.INTS: attribute.ints, onnx.AttributeProto.FLOATS:
            attribute.floats, onnx.AttributeProto.STRINGS: attribute.strings}.get(attribute.type)


def truncate_stage(model, bag: int, trees_per_member: int, keep: int, name: str = "stage",
                   rounds: int | None = None):
    """``model`` (an ``onnx.ModelProto`` holding one ``TreeEnsembleClassifier`` of ``bag`` ×
    ``trees_per_member`` trees, member after member) cut, in place, to the first ``rounds``
    trees (all by default) of each of its first ``keep`` members, leaf weights scaled by
    ``bag / keep`` and the trees numbered again from 0 in the same order. Boosting adds its
    rounds, so a member's first trees are that member trained for fewer rounds."""
    rounds = trees_per_member if rounds is None else rounds
    nodes = [n for n in model.graph.node if n.op_type == "TreeEnsembleClassifier"]
    if len(nodes) != 1:
        raise TruncateError(f"{name}: {len(nodes)} TreeEnsembleClassifier nodes, expected 1")
    attributes = {a.name: a for a in nodes[0].attribute}
    if "base_values" in attributes and any(_values(attributes["base_values"])):
        raise TruncateError(f"{name}: base_values are set; a bag member's share of them is "
                            "unknown")
    tree_ids = list(attributes["nodes_treeids"].ints)
    trees = len(set(tree_ids))
    if trees != bag * trees_per_member or set(tree_ids) != set(range(trees)):
        raise TruncateError(f"{name}: {trees} trees, expected {bag} members × "
                            f"{trees_per_member} trees numbered from 0")

    def kept(tree: int) -> bool:
        return tree // trees_per_member < keep and tree % trees_per_member < rounds

    def renumbered(tree: int) -> int:
        return tree // trees_per_member * rounds + tree % trees_per_member

    keep_nodes = [i for i, t in enumerate(tree_ids) if kept(t)]
    keep_leaves = [i for i, t in enumerate(attributes["class_treeids"].ints) if kept(t)]
    scale = bag / keep
    for attribute_name, attribute in attributes.items():
        if attribute_name.startswith("nodes_"):
            indices = keep_nodes
        elif attribute_name.startswith("class_") and attribute_name != "classlabels_int64s":
            indices = keep_leaves
        else:
            continue
        values = _values(attribute)
        new = [values[i] for i in indices]
        if attribute_name == "class_weights":
            new = [v * scale for v in new]
        elif attribute_name in ("nodes_treeids", "class_treeids"):
            new = [renumbered(t) for t in new]
        del values[:]
        values.extend(new)
    return model


def member_trees(fast: dict) -> dict[str, int]:
    """Per fast stage file, the trees of each of its bag members: ``results.json``'s
    ``fast.trees_per_stage``, one number for both stages or one per stage file (a cut that
    kept fewer rounds of one stage)."""
    trees = fast["trees_per_stage"]
    return {name: int(trees[name] if isinstance(trees, dict) else trees) for name in STAGE_FILES}


def parse_cut(text: str, fast: dict) -> tuple[int, tuple[int, int]]:
    """``train.cut_oof``'s cut notation (``KxR``, or ``K1xR1/K2xR2``: the first stage's, then
    the second's) as ``truncate_bundle``'s ``keep`` and ``rounds``; a bundle records one bag,
    so both stages keep the same members."""
    from train.cut_oof import parse_cut as parse

    trees = member_trees(fast)
    (first_keep, first_rounds), (second_keep, second_rounds) = parse(
        text, int(fast["bag"]), max(trees.values()))
    if first_keep != second_keep:
        raise TruncateError(f"cut {text!r}: both stages must keep the same members (a bundle "
                            f"records one bag), not {first_keep} and {second_keep}")
    return first_keep, (first_rounds, second_rounds)


def oof_threshold(oof: dict, cut: str, fast: dict, source: str) -> dict:
    """The threshold ``train.cut_oof`` chose for ``cut`` (its JSON record ``oof``, read from
    ``source``) and the figures it chose it by, checked to be this bag's: measured on a bag
    whose training chose the same threshold by the same out-of-fold figures."""
    if (oof.get("trained_threshold") != fast["decoding"]["main_margin"]
            or oof.get("trained_calibration_f1") != fast.get("calibration_f1")):
        raise TruncateError(f"{source} was measured on another bag (its trained threshold and "
                            "out-of-fold figures are not this bag's)")
    if cut not in oof.get("cuts", {}):
        raise TruncateError(f"{source} has no cut {cut!r} (it measured "
                            f"{', '.join(oof.get('cuts', {})) or 'none'})")
    figures = oof["cuts"][cut]
    return {"main_margin": figures["threshold"], "calibration_f1": figures["calibration_f1"],
            "command": oof.get("command")}


def truncate_bundle(model_dir: Path, keep: int, out: Path, command: str | None = None,
                    evaluate: bool = False, threads: int = 2,
                    rounds: int | tuple[int, int] | None = None,
                    threshold: dict | None = None) -> dict:
    """Write ``out``: ``model_dir`` with both fast stages cut to their first ``keep`` bag
    members, each to its first ``rounds`` trees (all by default; a pair: the first stage's,
    then the second's), at ``threshold`` (``oof_threshold``'s record: the cut's own, chosen out
    of fold) or the bag's. With ``evaluate``, each
    profile's figures on the dev pages with ground truth are measured again
    (``train.__main__.evaluate_profiles``, as training does) and the model card is written
    from them; without, ``results.json`` says its dev figures are the uncut model's. Returns
    the ``fast`` record written into ``out/results.json``."""
    import onnx

    results = json.loads((model_dir / RESULTS_NAME).read_text())
    fast = results.get("fast")
    if not fast or "bag" not in fast:
        raise TruncateError(f"{model_dir}: {RESULTS_NAME} records no fast rescorer bag")
    bag, trees = int(fast["bag"]), member_trees(fast)
    if not 1 <= keep <= bag:
        raise TruncateError(f"--keep {keep}: the bag of {model_dir} has {bag} members "
                            f"(keep 1 to {bag})")
    pair = (rounds, rounds) if rounds is None or isinstance(rounds, int) else tuple(rounds)
    kept_rounds = {name: trees[name] if r is None else r
                   for name, r in zip(STAGE_FILES, pair, strict=True)}
    for name, r in kept_rounds.items():
        if not 1 <= r <= trees[name]:
            raise TruncateError(f"--rounds {r}: the bag members of {model_dir} have "
                                f"{trees[name]} trees in {name} (keep 1 to {trees[name]})")
    stages = {name: truncate_stage(onnx.load(model_dir / name), bag, trees[name], keep,
                                   name, kept_rounds[name])
              for name in STAGE_FILES}
    if out.resolve() == model_dir.resolve():
        raise TruncateError(f"--out {out} is the model itself")
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(model_dir, out)
    for name, stage in stages.items():
        onnx.save(stage, out / name)
    threshold_record = None
    if threshold is not None:
        threshold_record = {
            "main_margin": threshold["main_margin"],
            "chosen": "the best mean word F1 of the cut's own out-of-fold scores on the train "
                      "pages (python -m train.cut_oof), as the training chooses the bag's",
            **({"command": threshold["command"]} if threshold.get("command") else {}),
            "bag_main_margin": fast["decoding"]["main_margin"],
            "bag_calibration_f1": fast.get("calibration_f1")}
        _set_main_margin(out, threshold["main_margin"])
        fast["decoding"]["main_margin"] = threshold["main_margin"]
        fast["calibration_f1"] = threshold["calibration_f1"]
    def one_or_each(per_stage: dict[str, int]) -> int | dict[str, int]:
        values = set(per_stage.values())
        return values.pop() if len(values) == 1 else per_stage

    truncated = {"from_bag": bag, "kept": keep, "from_rounds": one_or_each(trees),
                 "rounds": one_or_each(kept_rounds),
                 "rule": "the first rounds trees of each of the first kept members, leaf "
                         "values × from_bag / kept (the mean of those members' first rounds)",
                 **({"command": command} if command else {}),
                 **({"threshold": threshold_record} if threshold_record else {}),
                 "dev_groundtruth": "measured again" if evaluate else "the uncut model's",
                 **({"from": fast["truncated"]} if "truncated" in fast else {})}
    fast.update({"bag": keep, "trees_per_stage": one_or_each(kept_rounds),
                 "truncated": truncated,
                 "onnx_bytes": {name: (out / name).stat().st_size for name in STAGE_FILES}})
    results["fast"] = fast
    if evaluate:
        _evaluate(out, results, threads)
    (out / RESULTS_NAME).write_text(json.dumps(results, indent=2) + "\n")
    return fast


def _set_main_margin(out: Path, main_margin: float) -> None:
    """The fast profile's ``decoding.main_margin`` in ``out``'s manifest, written as the
    training writes the manifest."""
    from pulpie_rt.runtime.model.bundle import edit_manifest

    def with_margin(manifest: dict) -> None:
        manifest["profiles"]["fast"]["decoding"]["main_margin"] = main_margin

    edit_manifest(out, with_margin)


def _evaluate(out: Path, results: dict, threads: int) -> None:
    """``results``' dev figures measured again on ``out`` and its model card rewritten (the
    card is written from ``results.json``, as ``python -m train`` writes it)."""
    from pulpie_rt.runtime.model.bundle import read_manifest
    from train.__main__ import evaluate_profiles
    from train.card import model_card

    profiles = evaluate_profiles(out, threads)
    results["dev_groundtruth"] = {
        name: {k: v for k, v in scores.items() if k not in ("per_page", "micro")}
        for name, scores in profiles.items()}
    manifest = read_manifest(out)
    files = [p for p in out.iterdir() if p.suffix in (".onnx", ".json") and p.name not in (
        RESULTS_NAME,)]
    size = sum(p.stat().st_size for p in files)
    (out / "README.md").write_text(model_card(results, manifest, size), encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m train.truncate_bag",
        description="Keep the first K bag members of each fast rescorer stage (their mean).")
    parser.add_argument("model", type=Path, help="bundle folder (e.g. pulpie_rt/default_model)")
    cut = parser.add_mutually_exclusive_group(required=True)
    cut.add_argument("--keep", type=int, help="bag members to keep")
    cut.add_argument("--cut", help="train.cut_oof's notation: KxR (the first R trees of the "
                     "first K members, both stages) or KxR1/KxR2 (the first stage's, then the "
                     "second's)")
    parser.add_argument("--rounds", type=int, nargs="+", default=None, metavar="R",
                        help="trees (boosting rounds) to keep of each kept member, its first "
                             "(default: all); two values: the first stage's, then the "
                             "second's")
    parser.add_argument("--out", type=Path, required=True, help="new bundle folder (replaced)")
    parser.add_argument("--threshold-from", type=Path, metavar="OOF_JSON",
                        help="python -m train.cut_oof's --out for this bag: the threshold it "
                             "chose for this cut (needs --cut) replaces the bag's")
    parser.add_argument("--evaluate", action="store_true",
                        help="measure each profile on the dev pages with ground truth again and "
                             "rewrite the model card (what shipping the bundle needs)")
    parser.add_argument("--threads", type=int, default=2, help="threads for --evaluate")
    args = parser.parse_args(argv)
    if args.rounds is not None and len(args.rounds) > 2:
        parser.exit(2, f"error: --rounds {' '.join(map(str, args.rounds))}: give one value "
                       "(both stages) or two (the first stage's, then the second's)\n")
    if args.cut and args.rounds:
        parser.exit(2, "error: --cut gives the rounds: drop --rounds\n")
    if args.threshold_from and not args.cut:
        parser.exit(2, "error: --threshold-from reads the threshold of one cut: give --cut\n")
    rounds = None if args.rounds is None else (
        args.rounds[0] if len(args.rounds) == 1 else tuple(args.rounds))
    command = (f"python -m train.truncate_bag {args.model} "
               + (f"--cut {args.cut}" if args.cut else f"--keep {args.keep}")
               + (f" --rounds {' '.join(map(str, args.rounds))}" if args.rounds else "")
               + (f" --threshold-from {args.threshold_from}" if args.threshold_from else "")
               + f" --out {args.out}" + (" --evaluate" if args.evaluate else ""))
    try:
        keep, threshold = args.keep, None
        if args.cut:
            fast = json.loads((args.model / RESULTS_NAME).read_text()).get("fast") or {}
            if "bag" not in fast:
                raise TruncateError(f"{args.model}: {RESULTS_NAME} records no fast rescorer bag")
            try:
                keep, rounds = parse_cut(args.cut, fast)
            except ValueError as error:
                raise TruncateError(str(error)) from None
            if args.threshold_from:
                from train.cut_oof import cut_name

                name = cut_name(((keep, rounds[0]), (keep, rounds[1])))
                threshold = oof_threshold(json.loads(args.threshold_from.read_text()), name,
                                          fast, str(args.threshold_from))
        fast = truncate_bundle(args.model, keep, args.out, command, args.evaluate,
                               args.threads, rounds, threshold)
    except TruncateError as error:
        parser.exit(2, f"error: {error}\n")
    trees = member_trees(fast)
    print(f"{args.out}: {fast['truncated']['kept']} of {fast['truncated']['from_bag']} bag "
          "members per stage; trees " + ", ".join(
              f"{name} {trees[name] * fast['bag']} ({trees[name]} a member)"
              for name in STAGE_FILES))


if __name__ == "__main__":
    main()
