"""Word F1 of a rescorer-only profile (the default model's ``fast``) at other thresholds, on
each page set ``bench.quality`` scores: where each reference convention would put the
threshold that the training command chose on the train pages.

    python -m bench.thresholds [--model M] [--profile fast]
                                         [--sets groundtruth readability l3s-gn1 dragnet|all]
                                         [--thresholds -1 -0.5 0 0.5 1 1.5 2]
                                         [--container-prior none|SHARE/SHIFT ...]
                                         [--story-prior none|SHARE/SHIFT]
                                         [--short-story none|WORDS/SHIFT/PROSE_SHIFT]
                                         [--out PATH]

Each threshold runs the runtime itself: a copy of the bundle (its files linked) whose
profile's ``decoding.main_margin`` is that threshold, through ``Extractor(...).extract_batch``
as ``bench.quality`` runs it, each result's ``.text`` scored by ``eval.metrics.score_pages``
against the set's reference. The row marked ``*`` is the threshold the bundle ships (its F1
is ``bench.quality``'s). With ``--container-prior`` each threshold is decoded with that prior
(manifest ``decoding.container_prior``; ``none``: without one); with several, once with each
(a row per prior and threshold). With ``--story-prior`` every copy decodes with that story
prior (manifest ``decoding.story_prior``; ``none``: without one) whatever its container prior,
and with ``--short-story`` with that short story (manifest ``decoding.short_story``: on a page
whose story expects fewer than WORDS main prose words, the story prior's shift of the linked
blocks outside it is SHIFT and the prose outside it falls by PROSE_SHIFT; ``none``: without).
A set whose best threshold lies far from the shipped one says its
reference keeps more (lower) or less (higher) around the main content than the train pages'
ground truth does.

Measurement only: nothing here is used to choose or calibrate a model.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.quality import PAGE_SETS, page_sets, set_pages
from eval.metrics import score_pages
from eval.report import format_table, machine_info, write_result
from eval.systems import run_ours
from pulpie_rt.runtime.model.bundle import MANIFEST_NAME, edit_manifest

DEFAULT_THRESHOLDS = (-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0)


def linked_copy(bundle: Path, folder: Path, edit: Callable[[dict], None]) -> Path:
    """``bundle``'s files linked into ``folder`` (created), all but its manifest, which is
    written there as ``edit`` changes it (in place)."""
    folder.mkdir(parents=True)
    for entry in bundle.iterdir():
        if entry.name != MANIFEST_NAME:
            os.symlink(entry.resolve(), folder / entry.name)
    edit_manifest(bundle, edit, out=folder)
    return folder


# a bundle_at/sweep container_prior that leaves the bundle's own (its manifest's) as it is
SHIPPED_PRIOR = "shipped"


def bundle_at(bundle: Path, profile: str, threshold: float, folder: Path,
              container_prior: dict | str | None = SHIPPED_PRIOR,
              story_prior: dict | str | None = SHIPPED_PRIOR,
              short_story: dict | str | None = SHIPPED_PRIOR) -> Path:
    """``bundle``'s files linked into ``folder``, its manifest's ``profile`` deciding at
    ``threshold`` and with ``container_prior`` and ``story_prior`` (``{"share": …, "shift":
    …}``) and ``short_story`` (``{"words": …, "shift": …, "prose_shift": …}``; each None:
    without one; ``SHIPPED_PRIOR``: the bundle's own)."""
    def set_threshold(manifest: dict) -> None:
        decoding = manifest["profiles"][profile]["decoding"]
        decoding["main_margin"] = threshold
        for key, prior in (("container_prior", container_prior), ("story_prior", story_prior),
                           ("short_story", short_story)):
            if prior is None:
                decoding.pop(key, None)
            elif prior != SHIPPED_PRIOR:
                decoding[key] = prior

    return linked_copy(bundle, folder, set_threshold)


def sweep(bundle: Path, profile: str, pages: list[dict], thresholds: tuple[float, ...],
          container_prior: dict | str | None = SHIPPED_PRIOR,
          story_prior: dict | str | None = SHIPPED_PRIOR,
          short_story: dict | str | None = SHIPPED_PRIOR) -> dict[str, float]:
    """Mean word F1 over ``pages`` of ``bundle``'s ``profile`` at each threshold (keys
    ``"+0.25"`` …), decoded with ``container_prior``, ``story_prior`` and ``short_story`` (as
    ``bundle_at`` takes them)."""
    references = {p["id"]: p["reference"] for p in pages}
    f1 = {}
    with tempfile.TemporaryDirectory() as scratch:
        for index, threshold in enumerate(thresholds):
            copy = bundle_at(bundle, profile, threshold, Path(scratch) / str(index),
                             container_prior, story_prior, short_story)
            texts = run_ours(pages, str(copy), profile=profile)["texts"]
            f1[f"{threshold:+.2f}"] = round(score_pages(texts, references)["f1"], 4)
    return f1


def parse_prior(text: str, what: str = "container prior") -> dict | None:
    """``"SHARE/SHIFT"`` as a manifest's ``{"share": …, "shift": …}``; ``"none"``: None."""
    if text == "none":
        return None
    share, slash, shift = text.partition("/")
    if slash:
        try:
            return {"share": float(share), "shift": float(shift)}
        except ValueError:
            pass
    raise SystemExit(f"thresholds: {what} {text!r}: give none or SHARE/SHIFT, e.g. 0.6/0.5")


def parse_short_story(text: str) -> dict | None:
    """``"WORDS/SHIFT/PROSE_SHIFT"`` as a manifest's ``decoding.short_story``; ``"none"``:
    None."""
    if text == "none":
        return None
    parts = text.split("/")
    if len(parts) == 3:
        try:
            words, shift, prose_shift = map(float, parts)
            return {"words": words, "shift": shift, "prose_shift": prose_shift}
        except ValueError:
            pass
    raise SystemExit(f"thresholds: short story {text!r}: give none or WORDS/SHIFT/PROSE_SHIFT, "
                     "e.g. 150/3/0.5")


def prior_key(prior: dict | str | None) -> str:
    if prior == SHIPPED_PRIOR:
        return SHIPPED_PRIOR
    return "none" if prior is None else f"{prior['share']:g}/{prior['shift']:g}"


def main(argv: list[str] | None = None) -> int:
    from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL, resolve_model

    parser = argparse.ArgumentParser(prog="python -m bench.thresholds",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="bundle (default: the embedded default model)")
    parser.add_argument("--profile", default="fast",
                        help="a rescorer-only profile of the bundle (default fast)")
    parser.add_argument("--sets", nargs="*", default=["all"], metavar="SET",
                        help=f"page sets: {', '.join(PAGE_SETS)}, all (default all)")
    parser.add_argument("--thresholds", nargs="*", type=float, default=list(DEFAULT_THRESHOLDS))
    parser.add_argument("--container-prior", nargs="*", default=None, metavar="SHARE/SHIFT",
                        help="decode with this container prior (manifest decoding"
                             ".container_prior, e.g. 0.6/1; none: without one) at every "
                             "threshold; several: each in turn")
    parser.add_argument("--story-prior", default=None, metavar="SHARE/SHIFT",
                        help="decode with this story prior (manifest decoding.story_prior, "
                             "e.g. 0.5/3; none: without one; default: the bundle's own)")
    parser.add_argument("--short-story", default=None, metavar="WORDS/SHIFT/PROSE_SHIFT",
                        help="decode with this short story (manifest decoding.short_story, "
                             "e.g. 150/3/0.5; none: without one; default: the bundle's own)")
    parser.add_argument("--limit", type=int, default=None, help="at most N pages per set")
    parser.add_argument("--out", default=None,
                        help="JSON result: a .json file, or a folder (default: none written)")
    args = parser.parse_args(argv)
    bundle = resolve_model(args.model, profile=args.profile).bundle
    if bundle.uses_transformer or not bundle.has_rescorer or not bundle.profiles:
        raise SystemExit(f"thresholds: profile {args.profile!r} of {bundle.path} is not a "
                         "rescorer-only profile")
    priors = [parse_prior(text) for text in (args.container_prior or [])]
    story = (SHIPPED_PRIOR if args.story_prior is None
             else parse_prior(args.story_prior, "story prior"))
    short = (SHIPPED_PRIOR if args.short_story is None
             else parse_short_story(args.short_story))
    thresholds = tuple(sorted(set(args.thresholds) | {float(bundle.main_margin)}))
    shipped = f"{bundle.main_margin:+.2f}"
    quality_args = argparse.Namespace(sets=args.sets, articles=False, limit=args.limit,
                                      corpus="dev")
    tried = priors or [SHIPPED_PRIOR]
    several = len(tried) > 1
    n_pages: dict[str, int] = {}
    sweeps: dict[str, dict[str, dict]] = {}  # set -> prior key -> {"f1", "best"}
    for name in page_sets(quality_args):
        pages = [p for p in set_pages(name, quality_args) if p.get("reference")]
        n_pages[name], sweeps[name] = len(pages), {}
        for prior in tried:
            f1 = sweep(Path(bundle.path), args.profile, pages, thresholds, prior, story, short)
            best = max(f1, key=lambda t: (f1[t], -abs(float(t))))
            sweeps[name][prior_key(prior)] = {"f1": f1, "best": best}
            with_prior = f", container prior {prior_key(prior)}" if priors else ""
            print(f"thresholds: {name}: {len(pages)} pages{with_prior}, best {best} "
                  f"({f1[best]:.4f}), shipped {shipped} ({f1[shipped]:.4f})", flush=True)
    # one prior (or none given): a set's sweep as it is; several: keyed by prior
    results = {name: ({"pages": n_pages[name], **next(iter(by_prior.values()))}
                      if not several else {"pages": n_pages[name], "priors": by_prior})
               for name, by_prior in sweeps.items()}
    rows = []
    for prior in tried:
        key = prior_key(prior)
        lead = [key] if several else []
        for t in (f"{x:+.2f}" for x in thresholds):
            rows.append([*lead, f"{t}{' *' if t == shipped else ''}",
                         *(f"{by_prior[key]['f1'][t]:.4f}" for by_prior in sweeps.values())])
        rows.append([*lead, "best", *(by_prior[key]["best"] for by_prior in sweeps.values())])
    header = [*(["prior"] if several else []), "threshold", *results]
    print(format_table(header, rows))
    with_prior = (f", container prior {prior_key(priors[0])}" if len(priors) == 1
                  else f", container priors {' '.join(map(prior_key, priors))}" if priors
                  else "")
    with_story = "" if story == SHIPPED_PRIOR else f", story prior {prior_key(story)}"
    if short != SHIPPED_PRIOR:
        with_story += (", short story " + ("none" if short is None else
                                          "{words:g}/{shift:g}/{prose_shift:g}".format(**short)))
    print(f"word F1 of {bundle.path} profile {args.profile} at each threshold (* shipped)"
          f"{with_prior}{with_story}; {os.cpu_count()} CPUs")
    if args.out:
        own = bundle.container_prior  # what the copies decode with when no prior is given
        own = None if own is None else {"share": own[0], "shift": own[1]}
        prior_fields = ({"container_priors": priors} if several
                        else {"container_prior": priors[0] if priors else own})
        # the profile's own decoding, which the copies edit (the manifest's top-level
        # `decoding` is the profile-less one's)
        shipped_decoding = bundle.manifest["profiles"][args.profile]["decoding"]
        path = write_result("thresholds", {"kind": "thresholds", "machine": machine_info(),
                                           "model": str(bundle.path), "profile": args.profile,
                                           "shipped": shipped, **prior_fields,
                                           "story_prior": (
                                               shipped_decoding.get("story_prior")
                                               if story == SHIPPED_PRIOR else story),
                                           "short_story": (
                                               shipped_decoding.get("short_story")
                                               if short == SHIPPED_PRIOR else short),
                                           "sets": results}, args.out)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
