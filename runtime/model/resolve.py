"""Models: turn the user's ``model=`` into a bundle on disk.

``model`` may be

- ``"default"`` (what ``Extractor()``, ``Pipeline()`` and ``pulpie-rt run`` use when given no
  model): the model configured in ``$PULPIE_RT_MODEL`` if set, else the small model embedded
  in the package (``pulpie_rt/default_model/``, trained on real pages by
  ``python -m train``; offline, CPU-friendly);
- a hub name (``orange-small`` …) or hub id (``owner/name``): downloaded with
  ``huggingface_hub``, then treated as a checkpoint directory;
- a local Hugging Face checkpoint directory (``config.json`` + weights): exported once into
  the cache (``$PULPIE_RT_CACHE`` or ``~/.cache/pulpie-rt``), keyed by the weights' sha256,
  then reused. Export needs the ``export`` extra (torch); it runs in a child process so the
  runtime process never imports torch;
- a bundle directory (``manifest.json``, ``model.onnx``, ``tokenizer.json``; with the TensorRT
  engines ``pulpie-rt engine`` built into its ``tensorrt/<gpu>/`` folder, which the engine
  loads with backend ``tensorrt``).

A TensorRT engine file is not a model: ``pulpie-rt engine`` builds engines into the bundle.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from pulpie_rt.runtime.model.bundle import Bundle, BundleError, is_bundle, load_bundle
from pulpie_rt.runtime.model.hub import HubError, fetch_checkpoint, hub_id_for, model_names

DEFAULT_MODEL = "default"
MODEL_ENV = "PULPIE_RT_MODEL"
# TensorRT engine files, which earlier releases took as models: now built into the bundle
ENGINE_SUFFIXES = (".engine", ".plan")
WEIGHT_PATTERNS = ("*.safetensors", "*.bin")
# what ``pulpie-rt export`` imports (the ``export`` extra); the runtime itself needs none of them
EXPORT_MODULES = ("torch", "transformers", "onnx")


class ModelError(ValueError):
    """A ``model=`` that cannot be resolved; the message is one line for the user."""


@dataclass(frozen=True)
class ResolvedModel:
    """The bundle a ``model=`` names, read with its profile."""

    bundle: Bundle


def embedded_model_dir() -> Path:
    """The bundle shipped inside the package (the model card is its ``README.md``): beside the
    package's ``__init__.py``, where ``importlib.resources.files`` finds a package's files on
    disk (importing importlib.resources and its readers cost each ``pulpie-rt`` process ~8 ms).
    The package is read from ``sys.modules``, not imported: Python imports a package before any
    of its modules, and this layer may not import the package's top (``tests/test_layers.py``)."""
    return Path(sys.modules["pulpie_rt"].__file__).parent / "default_model"


def cache_dir() -> Path:
    env = os.environ.get("PULPIE_RT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "pulpie-rt"


def is_checkpoint(path: Path) -> bool:
    return (path / "config.json").is_file() and any(
        any(path.glob(pattern)) for pattern in WEIGHT_PATTERNS
    )


def checkpoint_key(path: Path) -> str:
    """sha256 of the weight files and configs: the cache key of an exported checkpoint."""
    from pulpie_rt.runtime.digest import files_sha256  # (hashlib: a bundle's run needs none)

    names = sorted({p.name for pattern in WEIGHT_PATTERNS for p in path.glob(pattern)})
    names += [n for n in ("config.json", "tokenizer.json") if (path / n).is_file()]
    return files_sha256((path / name for name in names), with_names=True)


def export_checkpoint(path: Path, verify: bool = True) -> Path:
    """The cached bundle of checkpoint ``path``, exported on first use (``pulpie-rt export``).

    ``verify`` runs the exporter's parity check against PyTorch (slower, the safe default).
    """
    out = cache_dir() / "bundles" / checkpoint_key(path)[:20]
    if is_bundle(out):
        return out
    missing = [name for name in EXPORT_MODULES if importlib.util.find_spec(name) is None]
    if missing:  # the run environment (make run) has no torch unless a MODEL needs it
        raise ModelError(f"{path}: exporting a checkpoint to ONNX needs the export extra "
                         f"({', '.join(missing)} missing here): pip install 'pulpie-rt[export]' "
                         f"(`make run MODEL=...` installs it), or pass a bundle directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + f".tmp-{os.getpid()}")
    import subprocess  # (here: resolving a bundle, a run's start, does not import it)

    command = [sys.executable, "-m", "pulpie_rt.cli", "export", str(path), "--out", str(partial)]
    if not verify:
        command.append("--no-verify")
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 or not is_bundle(partial):
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise ModelError(f"{path}: export to ONNX failed: {lines[-1]}")
    try:
        partial.rename(out)  # atomic: a concurrent exporter may have won, that is fine
    except OSError:
        if not is_bundle(out):
            raise
    return out


def resolve_model(
    model: str | os.PathLike = DEFAULT_MODEL, verify_export: bool = True,
    profile: str | None = None,
) -> ResolvedModel:
    """The bundle that ``model`` names, read with ``profile`` (None: the
    bundle's default; as the core reads it, ``bundle.load_bundle``); ``ModelError`` says why not."""
    if str(model) == DEFAULT_MODEL:
        configured = os.environ.get(MODEL_ENV, "").strip()
        if configured and configured != DEFAULT_MODEL:
            return resolve_model(configured, verify_export, profile)
        embedded = embedded_model_dir()
        if not is_bundle(embedded):
            raise ModelError(f"the embedded default model is missing from {embedded} (a broken "
                             f"install?); pass a model (--model orange-small, a bundle or a "
                             f"checkpoint directory) or set {MODEL_ENV}")
        model = embedded
    path = Path(model).expanduser()
    if path.is_file() and path.suffix in ENGINE_SUFFIXES:
        raise ModelError(f"model {str(model)!r}: a TensorRT engine file is not a model: pass its "
                         "bundle directory (`pulpie-rt engine BUNDLE` builds the engines into "
                         "it, and backend 'tensorrt' loads them)")
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"model {str(model)!r}: not a directory or a bundle")
        if not is_bundle(path):
            if not is_checkpoint(path):
                raise ModelError(f"model {str(model)!r}: directory is neither a pulpie-rt "
                                 "bundle (manifest.json) nor a checkpoint (config.json + weights)")
            path = export_checkpoint(path, verify_export)
    else:
        name = str(model)
        hub_id = hub_id_for(name)
        if hub_id is None:
            raise ModelError(f"model {name!r}: no such file or directory, and not a hub name "
                             f"({DEFAULT_MODEL}, {model_names()} or owner/name)")
        try:
            checkpoint, _revision = fetch_checkpoint(name, hub_id)
        except HubError as exc:
            raise ModelError(str(exc)) from exc
        path = export_checkpoint(checkpoint, verify_export)
    try:
        return ResolvedModel(load_bundle(path, profile))
    except BundleError as exc:
        raise ModelError(str(exc)) from exc
