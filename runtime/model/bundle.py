"""The exported-model bundle: what the runtime needs from a checkpoint, and nothing else.

A bundle directory holds ``model.onnx`` (+ external data for large models), ``tokenizer.json``
and ``manifest.json``. ``pulpie_rt.export`` writes it; the runtime only reads it (no torch).

``manifest.json`` (format_version 1)::

    {
      "format": "pulpie-rt-bundle", "format_version": 1,
      "source": {"id": str, "revision": str|null, "weights_sha256": str},
      "model": {"architecture": str, "num_labels": 2, "hidden_size": int,
                "num_hidden_layers": int, "num_attention_heads": int,
                "intermediate_size": int, "vocab_size": int},
      "tokens": {"bos_id": int|null, "eos_id": int|null, "sep_id": int, "pad_id": int,
                 "sep_token": "<|sep|>"},
      "max_tokens": 8192,
      "labels": {"0": "other", "1": "main"},
      "decoding": {"keep_best_block": bool, "main_margin": float,
                   "selection": "threshold"|"expected_f1",
                   "container_prior": {"share": float, "shift": float},
                   "story_prior": {"share": float, "shift": float},
                   "short_story": {"words": float, "shift": float, "prose_shift": float},
                   "continue_story": bool},   (optional)
      "rescorer": {"file": "rescorer.onnx",
                   "features": "blocks-v1"|"blocks-v2"|"blocks-v3"|"blocks-v4"|"blocks-v5",
                   "margin_weight": float,
                   "context": "context-v4"|"context-v5"|"context-v6",
                   "first_stage": "file.onnx"},
                   (optional; context-v4 reads blocks-v3, context-v5 blocks-v4, context-v6
                   blocks-v5, a rescorer without context blocks-v1)
      "onnx": {"file": "model.onnx", "opset": int, "precision": "fp32"|"fp16",
               "inputs": ["input_ids", "attention_mask"], "output": "logits",
               "external_data": bool,
               "attention": "fused"|"gpu", "layout": "rows"|"packed"|"packed-reference"},
               (attention, optional: export --attention fused writes "fused", and inputs
               ["input_ids"]: a graph without attention_mask, which the engine gives one
               unpadded chunk per model call; python -m pulpie_rt.export.gpu_graph writes
               "gpu" and the layout: ONNX Runtime's fused operators, no Shape node, inputs
               input_ids and position_ids, with attention_mask (rows padded to a bucket) or
               cumulative_sequence_length and token_offset (packed: several chunks in one
               row; "max_call_tokens": the most tokens such a row may hold). The core refuses
               any but the unfused graph for TensorRT)
      "exporter": {"pulpie_rt": str, "torch": str, "transformers": str, "onnx": str,
                   "onnxruntime": str, "method": str},
      "verification": {... as measured by the export, or null with --no-verify}
    }

``decoding`` is off for the Orange bundles (their labels must equal the reference's, which
take the argmax at each SEP); the embedded default model uses it:

- ``main_margin``: a block is main when logit(main) - logit(other) > ``main_margin`` (absent:
  the argmax, i.e. margin > 0); calibrated on held-out pages by ``train``;
- ``keep_best_block``: when no block of a page is main, the block with the largest margin is
  kept anyway, so a page with blocks never comes out empty;
- ``selection`` (absent: ``threshold``): ``expected_f1`` keeps, instead of the blocks above
  ``main_margin``, the blocks whose selection maximises the page's expected word F1, block
  ``i`` being main with probability ``sigmoid(score_i - main_margin)`` and weighing its words
  (``core/src/engine/decode.rs``' ``expected_f1_labels``; needs the block features).
- ``container_prior`` (absent: none): before the selection, the scores of the blocks outside
  the page's dominant container (the container of fewest blocks holding ``share`` of the
  page's expected main words, each block main with probability ``sigmoid(score)``) are lowered
  by ``shift`` (``decode.rs``' ``container_prior``; needs a rescorer over ``blocks-v3``,
  ``blocks-v4`` or ``blocks-v5``, whose container columns name each block's ancestors). The
  compiled core checks it when it opens the bundle.
- ``story_prior`` (absent: none): before the container prior, the story's container is
  decided first: the container of fewest blocks holding ``share`` of the page's expected main
  prose words (blocks under a quarter of their words linked); the linked blocks outside it
  are lowered by ``shift`` (``decode.rs``' ``story_prior``; needs a rescorer over
  ``blocks-v3``, ``blocks-v4`` or ``blocks-v5``).
- ``short_story`` (absent: none; needs ``story_prior``): on a page whose story's container
  expects fewer than ``words`` main prose words, the story prior lowers the linked blocks
  outside it by this ``shift`` (in place of its own) and the prose blocks outside it by
  ``prose_shift`` (``decode.rs``' ``ShortStory``).
- ``continue_story`` (absent: false): after the selection, the story of a main prose block
  goes on through the later prose blocks whose parent or grandparent is its parent element,
  until a main prose block elsewhere starts another story (``decode.rs``' ``continue_story``;
  prose: 10 words or more, under a quarter of them linked; needs a rescorer over
  ``blocks-v3``, ``blocks-v4`` or ``blocks-v5``).

``rescorer`` (the default model only): a tree ensemble over block features read from the page
(``runtime.rescore``). A block's score is then the ensemble's log-odds plus ``margin_weight``
times its margin, and ``main_margin`` and ``keep_best_block`` apply to that score.

``profiles`` (optional; the default model has two): named speed/quality trade-offs of the same
files, each with its own ``decoding`` and ``rescorer`` and whether the transformer runs::

      "profiles": {"fast": {"transformer": false, "decoding": {...}, "rescorer": {...}},
                   "accurate": {"transformer": true, "decoding": {...}, "rescorer": {...}}},
      "default_profile": "fast"

``load_bundle(path, profile)`` reads one of them (None: ``default_profile``) as if its
``decoding`` and ``rescorer`` were the manifest's own. The compiled core reads the manifest
(``core/src/engine/bundle.rs``, the engine's reader, its checks and messages); ``Bundle`` holds
what it read (``pulpie_rt_py_bundle_info``), so the runtime, the tools and the engine read one
file one way. A profile without the transformer scores
blocks by the rescorer alone: no tokens, no chunks, no ONNX session for ``model.onnx``.

A profile may also carry ``"keep_hidden": true`` (a JSON boolean; absent: false): its pages
are segmented without removing the elements the reference removes as hidden
(``runtime.stages.simplify``'s ``keep_hidden``: inline ``display:none``/``opacity:0`` …, a
closed ``<details>``' content, a ``nav`` child of ``<body>``), the segmentation its rescorer
was trained on; ``Bundle.keep_hidden``, and every entry point through
``Preparer.from_bundle``, follow it. Only a profile may say so: the top level is what readers
without profiles (the C library, which always segments as the reference does) run, so a
top-level ``keep_hidden`` other than false is refused. The Orange bundles never set it (their
blocks must equal the reference's).

``"drop_noscript": true`` is a profile's setting in the same way (a JSON boolean; absent: false;
refused at the top level likewise): its pages are segmented without the ``noscript`` elements
that hold no block (``runtime.stages.simplify``'s ``drop_noscript``: a browser running scripts
never renders them, and pages put tracking pixels there); ``Bundle.drop_noscript``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MANIFEST_NAME = "manifest.json"
TOKENIZER_NAME = "tokenizer.json"
BUNDLE_FORMAT = "pulpie-rt-bundle"
BUNDLE_FORMAT_VERSION = 1


class BundleError(ValueError):
    """A bundle directory that is missing files or has an unreadable manifest."""


@dataclass(frozen=True)
class Bundle:
    """A bundle as the compiled core read it: ``info`` is ``pulpie_rt_py_bundle_info``'s (the
    selected profile's model file, tokens, rescorer, segmentation and decoding)."""

    path: Path
    info: dict[str, Any]

    @property
    def manifest(self) -> dict[str, Any]:
        """``manifest.json`` as written (the export's records: model shape, verification,
        TensorRT engines); what the runtime runs is ``info``, the core's reading of it."""
        return json.loads((self.path / MANIFEST_NAME).read_text(encoding="utf-8"))

    @property
    def onnx_path(self) -> Path:
        return self.path / self.info["onnx_file"]

    @property
    def tokenizer_path(self) -> Path:
        return self.path / TOKENIZER_NAME

    @property
    def output(self) -> str:
        """The model's output holding the logits (``onnx.output``)."""
        return self.info["output"]

    @property
    def sep_id(self) -> int:
        return self.info["sep_id"]

    @property
    def bos_id(self) -> int | None:
        return self.info["bos_id"]

    @property
    def eos_id(self) -> int | None:
        return self.info["eos_id"]

    @property
    def pad_id(self) -> int:
        return self.info["pad_id"]

    @property
    def profile(self) -> str | None:
        """The profile this bundle was loaded with (None: the bundle has no profiles)."""
        return self.info["profile"]

    @property
    def profiles(self) -> tuple[str, ...]:
        return tuple(self.info["profiles"])

    @property
    def uses_transformer(self) -> bool:
        """False for a rescorer-only profile: blocks are scored from their features alone."""
        return self.info["transformer"]

    @property
    def keep_hidden(self) -> bool:
        """Whether pages are segmented without removing hidden elements (the selected
        profile's ``keep_hidden``; False for a bundle without profiles)."""
        return self.info["keep_hidden"]

    @property
    def drop_noscript(self) -> bool:
        """Whether pages are segmented without the ``noscript`` elements that hold no block
        (``stages.simplify``'s ``drop_noscript``; the selected profile's
        ``drop_noscript``; False for a bundle without profiles)."""
        return self.info["drop_noscript"]

    @property
    def decoding(self) -> dict[str, Any]:
        """The bundle's decoding as ``pulpie_rt_decoding``'s fields (``margins``,
        ``threshold``, ``keep_best``, ``expected_f1``, ``container_prior``,
        ``continue_story``, and any the core adds): ``native.decide_blocks(**decoding)``."""
        return dict(self.info["decoding"])

    @property
    def keep_best_block(self) -> bool:
        return self.info["decoding"]["keep_best"]

    @property
    def main_margin(self) -> float | None:
        return self.info["decoding"]["threshold"]

    @property
    def expected_f1(self) -> bool:
        """Whether ``decoding.selection`` is ``expected_f1`` (absent: ``threshold``)."""
        return self.info["decoding"]["expected_f1"]

    @property
    def container_prior(self) -> tuple[float, float] | None:
        """``decoding.container_prior`` as ``(share, shift)`` (absent: None)."""
        prior = self.info["decoding"]["container_prior"]
        return None if prior is None else tuple(prior)

    @property
    def continue_story(self) -> bool:
        """``decoding.continue_story`` (absent: False)."""
        return self.info["decoding"]["continue_story"]

    @property
    def has_rescorer(self) -> bool:
        return self.info["rescorer"] is not None

    @property
    def rescorer_spec(self) -> dict[str, Any] | None:
        """The selected profile's ``rescorer`` entry (``file``, ``features``,
        ``margin_weight``, ``context``, ``first_stage``), or None."""
        return self.info["rescorer"]

    @property
    def prepared_features(self) -> str | None:
        """The layout of the block features a page is prepared with (the engine's choice: the
        rescorer's, else ``blocks-v1`` when the decoding reads words), or None."""
        return self.info["prepared_features"]

    @property
    def feature_layout(self) -> str:
        """The block feature layout the rescorer reads (``blocks-v1`` without one)."""
        from pulpie_rt.runtime.stages.features import FEATURES_VERSION

        return self.info["rescorer"]["features"] if self.has_rescorer else FEATURES_VERSION

    @property
    def rescorer_path(self) -> Path | None:
        return self.path / self.info["rescorer"]["file"] if self.has_rescorer else None

    @property
    def rescorer(self):
        """The bundle's ``BlockRescorer`` (cached), or None when it has none."""
        return self.load_rescorer() if self.has_rescorer else None

    def load_rescorer(self, margin_weight: float | None = None):
        """The bundle's rescorer with its own ``margin_weight``, or with the one given (the
        calibration tries several); cached per weight."""
        from pulpie_rt.runtime.stages.rescore import load_rescorer

        spec = self.info["rescorer"]
        weight = spec["margin_weight"] if margin_weight is None else margin_weight
        first = spec["first_stage"]
        return load_rescorer(self.rescorer_path, weight, spec["features"], spec["context"],
                             None if first is None else self.path / first)

    @property
    def max_tokens(self) -> int:
        return self.info["max_tokens"]


def is_bundle(path: str | Path) -> bool:
    return (Path(path) / MANIFEST_NAME).is_file()


def load_bundle(path: str | Path, profile: str | None = None) -> Bundle:
    """Read and check a bundle directory with ``profile``'s decoding (None: its
    ``default_profile``), as the compiled core reads it; a ``BundleError`` names what is
    wrong (the core's message)."""
    from pulpie_rt.runtime import native

    try:
        info = native.bundle_info(Path(path), profile)
    except native.PageFailed as exc:
        raise BundleError(str(exc)) from None
    return Bundle(Path(path), info)


def write_manifest(path: str | Path, manifest: dict[str, Any]) -> Path:
    """Write ``manifest.json`` into the folder ``path`` (format fields filled in, first where
    ``manifest`` lacks them) and return its path."""
    data = {"format": BUNDLE_FORMAT, "format_version": BUNDLE_FORMAT_VERSION, **manifest}
    return _write_manifest_file(path, data)


def _write_manifest_file(path: str | Path, manifest: dict[str, Any]) -> Path:
    """``manifest`` as ``manifest.json`` in the folder ``path``, in the one layout every
    writer of a manifest uses."""
    out = Path(path) / MANIFEST_NAME
    out.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return out


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The bundle folder ``path``'s ``manifest.json`` as written, unchecked (``load_bundle``
    checks a bundle as the core reads it)."""
    return json.loads((Path(path) / MANIFEST_NAME).read_text(encoding="utf-8"))


def edit_manifest(path: str | Path, edit: Callable[[dict[str, Any]], None],
                  out: str | Path | None = None) -> dict[str, Any]:
    """The bundle folder ``path``'s manifest, changed in place by ``edit`` and written back
    (into the folder ``out`` where given), nothing else in it changed; returns what was
    written. Every tool that changes a manifest goes through here, so all write one layout."""
    manifest = read_manifest(path)
    edit(manifest)
    _write_manifest_file(path if out is None else out, manifest)
    return manifest
