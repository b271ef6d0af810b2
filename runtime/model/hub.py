"""The published Pulpie checkpoints on the Hugging Face hub: one list of names and one
downloader, for ``Extractor``, ``Pipeline``, ``pulpie-rt run/extract/export`` and ``make engine``.

Fetching fails fast: with ``HF_HUB_OFFLINE`` set it only looks in the local cache, otherwise one
short request decides whether the hub is reachable (``snapshot_download`` alone retries for
minutes), and the error says how to bring the checkpoint over by hand.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# Names accepted wherever a model is named; a hub id (owner/name) is accepted as it is.
HUB_MODELS = {
    "orange-small": "feyninc/pulpie-orange-small",
    "orange-base": "feyninc/pulpie-orange-base",
    "orange-large": "feyninc/pulpie-orange-large",
    "small": "feyninc/pulpie-orange-small",
    "base": "feyninc/pulpie-orange-base",
    "large": "feyninc/pulpie-orange-large",
}
HUB_TIMEOUT_S = 5.0
CHECKPOINT_FILES = ["config.json", "*.safetensors", "*.safetensors.index.json",
                    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
_HUB_ID_RE = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


class HubError(ValueError):
    """A hub model that cannot be fetched (offline, unreachable, unknown); one line for the
    user, with what to do."""


def hub_id_for(name: str) -> str | None:
    """The hub id that ``name`` means (a listed name or an ``owner/name`` id), else None."""
    hub_id = HUB_MODELS.get(name, name)
    if name.startswith((".", "/", "~")) or not _HUB_ID_RE.fullmatch(hub_id):
        return None
    return hub_id


def model_names() -> str:
    """The accepted names, for error messages."""
    return ", ".join(HUB_MODELS)


def _message(model: str, hub_id: str, reason: str) -> str:
    return (
        f"cannot fetch {hub_id!r} for model {model!r}: {reason}. On a machine with internet "
        f"access run `hf download {hub_id} --local-dir DIR`, copy DIR here and pass DIR as the "
        "model instead."
    )


def _short_reason(exc: Exception) -> str:
    name = type(exc).__name__
    if "NotFound" in name or "RepositoryNotFound" in name:
        return "the hub has no such model (or it is private)"
    return "the Hugging Face Hub is unreachable"


def fetch_checkpoint(model: str, hub_id: str) -> tuple[Path, str | None]:
    """``(local directory, revision)`` of hub checkpoint ``hub_id`` (named ``model`` by the
    user), from the local cache or the hub; ``HubError`` at once when neither has it."""
    from huggingface_hub import snapshot_download

    def from_cache() -> Path | None:
        try:
            return Path(snapshot_download(hub_id, allow_patterns=CHECKPOINT_FILES,
                                          local_files_only=True))
        except Exception:  # noqa: BLE001 - any failure here just means "not cached"
            return None

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        cached = from_cache()
        if cached is None:
            raise HubError(_message(model, hub_id, "HF_HUB_OFFLINE is set and it is not in "
                                                   "the local cache"))
        return cached, cached.name

    from huggingface_hub import model_info

    try:
        info = model_info(hub_id, timeout=HUB_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - connection, DNS, proxy, 401/404 all end here
        cached = from_cache()
        if cached is not None:
            return cached, cached.name
        raise HubError(_message(model, hub_id, _short_reason(exc))) from None
    path = Path(snapshot_download(hub_id, revision=info.sha, allow_patterns=CHECKPOINT_FILES))
    return path, info.sha
