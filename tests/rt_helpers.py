"""Shared helpers for the runtime tests: real dev pages, simplified once, and small tokenizers.

Tokenizers here are trained on real dev HTML in a temporary folder (seconds), in the byte-level
BPE style EuroBERT uses, so tests do not depend on the hub. ``tiny_checkpoint()`` returns the
committed tiny test checkpoint when present.
"""

from __future__ import annotations

import json
import os
import sqlite3
from functools import lru_cache
from pathlib import Path

from pulpie_rt.corpus import load_pages

FIXTURES = Path(__file__).parent / "fixtures"
TINY_CHECKPOINT = FIXTURES / "tiny-eurobert"
SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"]
# Llama-3 style pre-tokenizer split (EuroBERT's tokenizer is of this family).
SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@lru_cache(maxsize=1)
def dev_subset(step: int = 3) -> tuple[dict, ...]:
    """Every ``step``-th dev page (real pages; a subset keeps the tests fast)."""
    return tuple(load_pages("dev")[::step])


@lru_cache(maxsize=4)
def simplified(step: int = 3) -> tuple[tuple[str, str, str], ...]:
    """``(page_id, simplified_html, map_html)`` of ``dev_subset(step)``."""
    from pulpie_rt.runtime.stages.simplify import simplify

    return tuple((p["id"], *simplify(p["html"])) for p in dev_subset(step))


def train_tokenizer(out_dir: Path, with_sep: bool) -> Path:
    """A small byte-level BPE ``tokenizer.json`` (+ transformers config) in ``out_dir``."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    out_dir.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    specials = SPECIALS + (["<|sep|>"] if with_sep else [])
    trainer = trainers.BpeTrainer(
        vocab_size=1200,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((p["html"][:40_000] for p in dev_subset()[:8]), trainer)
    # A tokenizer.json may carry truncation settings; transformers ignores them on encode.
    tok.enable_truncation(64)
    tok.save(str(out_dir / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIALS[0],
        "eos_token": SPECIALS[1],
        "pad_token": SPECIALS[2],
        "model_max_length": 8192,
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(config))
    return out_dir


def reference_tokenizer(path: Path):
    """The reference's tokenizer setup (transformers; test oracle only)."""
    from pulpie.chunker import SEP_TOKEN
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if SEP_TOKEN not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [SEP_TOKEN]})
    return tokenizer


@lru_cache(maxsize=1)
def tiny_bundle() -> Path:
    """The tiny checkpoint exported (unverified: the export tests verify) once per test run."""
    import atexit
    import shutil
    import subprocess
    import sys
    import tempfile

    env_bundle = os.environ.get("PULPIE_RT_TEST_BUNDLE")
    if env_bundle:
        return Path(env_bundle)
    root = Path(tempfile.mkdtemp(prefix="pulpie-rt-tiny-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    out = root / "bundle"
    command = [sys.executable, "-m", "pulpie_rt.cli", "export", str(TINY_CHECKPOINT),
               "--out", str(out), "--no-verify"]
    subprocess.run(command, check=True, capture_output=True)
    return out


def short_context_bundle(tmp_path: Path, max_tokens: int = 128) -> Path:
    """The tiny bundle packing chunks of ``max_tokens``: many chunks per page, so the
    60,000-block page takes seconds, not minutes, and page limits cut real pages (8192-token
    packing is checked against the reference in test_chunks)."""
    source = tiny_bundle()
    bundle = tmp_path / f"short-bundle-{max_tokens}"
    bundle.mkdir()
    for item in source.iterdir():
        (bundle / item.name).symlink_to(item)
    manifest = json.loads((source / "manifest.json").read_text())
    (bundle / "manifest.json").unlink()
    (bundle / "manifest.json").write_text(json.dumps({**manifest, "max_tokens": max_tokens}))
    return bundle


GOLDEN_LABELS = Path(__file__).parent / "golden" / "labels_tiny.json.gz"


@lru_cache(maxsize=1)
def golden_labels() -> dict:
    import gzip

    with gzip.open(GOLDEN_LABELS, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def small_dev_pages(max_chars: int = 40_000) -> list[dict]:
    """Dev pages of at most ``max_chars`` characters (56 real pages: cheap model runs)."""
    return [p for p in load_pages("dev") if len(p["html"]) <= max_chars]


def hostile_pages() -> dict[str, str]:
    """Synthetic edge cases (not real pages), one definition for every test that must get a
    result for each: empty and binary input, NUL bytes, 20,000-deep nesting, 60,000 blocks, a
    5 MB page, control characters, odd attributes, raw-text tags."""
    return {
        "empty": "",
        "whitespace": "   \n\t ",
        "plain-text": "plain text without any tag",
        "binary-garbage": bytes(range(256)).decode("latin-1") * 40,
        "nul-bytes": "<p>a\x00b</p><p>\x00\x00</p>",
        "deep": "<div>" * 20000 + "deep text" + "</div>" * 20000,
        "many-blocks": "<body>" + "".join(f"<p>block {i}</p>" for i in range(60000)) + "</body>",
        "many-inline-runs": "<div>" + "<b>x</b> tail<br>" * 3000 + "</div>",
        "control-chars-and-refs": "<p>a&#1;b\x01c</p><div title='x\x02'>t</div><p>\ufffe</p>",
        "long-block": "<div>" + "word " * 400 + "<b>" + "x" * 300 + "</b>tail</div>",
        "unicode-spaces": "<p>\u3000a\u00a0\u2003b\x1c</p><p>\u205f</p><pre>\x0bc</pre>",
        "uri-attributes": '<p><a href=" /a b?c=é&d" name="n m">l</a><img src="x y.png" alt=" a ">'
        "</p>",
        "quotes-in-attributes": "<p title='a\"b' class=\"c'd\" id='e\"f&apos;g'>q</p>",
        "attr-with-comment": '<p title="<!-- a > b -->&c">q</p>',
        # the raw-text flag: the core reads it off the tree, Python off the raw page
        "raw-text-tags-only-in-comments": "<!-- <xmp> --><p>a > b</p><script>'<noembed>'</script>",
        "raw-text-upper-case": "<div><XMP>a > b &amp; <c></XMP> t</div><p><NOFRAMES>x<y</NOFRAMES>"
        "</p>",
        "5mb-page": "<html><body><p>" + "word " * 1_000_000 + "</p></body></html>",
        "script-only": "<html><script>" + "var a = 1;" * 1000 + "</script></html>",
        "unclosed-tags": "<html><body><div><p>unclosed <b>bold <i>italic <table><tr><td>cell",
    }


# dev pages for the train corpora derived from WCXB articles (conftest's derivation_pages)
WCXB_ARTICLES = ("wcxb/dev/0437", "wcxb/dev/4497", "wcxb/dev/4705")  # WCXB's type: article
WCXB_FORUM = "wcxb/dev/0538"
NOT_WCXB = "readability/nytimes-1"



def write_corpus(folder: Path, name: str, pages: list[dict]) -> Path:
    """``pages`` as corpus ``name`` in ``folder`` (``<name>.jsonl.gz``, the format
    ``pulpie_rt.corpus`` reads; point ``PULPIE_RT_CORPUS`` at ``folder`` to use it)."""
    import gzip

    path = folder / f"{name}.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for page in pages:
            fh.write(json.dumps(page) + "\n")
    return path


def small_fast_recipe(**settings):
    """The recipe ``train_small_fast_profile`` trains: 2 folds, 5 trees, one thread, a bag of
    one, no added article set (a test's folder has none built), changed by ``settings``."""
    from dataclasses import replace

    from train.fit import Recipe

    return replace(Recipe(), **{"corpus": "mini", "fast_folds": 2, "rescorer_rounds": 5,
                                "rescorer_min_leaf": 5, "threads": 1, "fast_bag": 1,
                                "fast_extra_sets": (), **settings})


def train_small_fast_profile(tmp_path: Path, monkeypatch, corpus_folder: Path,
                             **settings) -> tuple[dict, list[str]]:
    """``train.fast.write_fast_rescorer`` on corpus ``mini`` of ``corpus_folder`` with a small
    recipe (2 folds, 5 trees, one thread, a bag of one, no added article set: a test's
    folder has none built) changed by ``settings``, into
    ``tmp_path / "work" / "bundle"`` (its training caches under ``tmp_path / "build"``): what
    it returns and the lines it logged."""
    from train.fast import write_fast_rescorer

    monkeypatch.setenv("PULPIE_RT_CORPUS", str(corpus_folder))
    monkeypatch.chdir(tmp_path)  # the training caches go to build/train-data here
    recipe = small_fast_recipe(**settings)
    bundle = tmp_path / "work" / "bundle"
    bundle.mkdir(parents=True, exist_ok=True)
    logged: list[str] = []
    return write_fast_rescorer(bundle, recipe, log=logged.append), logged


def bundle_with_fast_profile(tmp_path: Path, fast: dict, trained: Path) -> Path:
    """The embedded default model's bundle in ``tmp_path / "bundle"`` with the fast profile
    that ``train_small_fast_profile`` trained (``fast``: what it returned; ``trained``: the
    folder of its two stages' files) in place of its own."""
    from train.fast import FAST_FIRST_STAGE_NAME, FAST_RESCORER_NAME

    bundle = default_model_copy(tmp_path, rescorer=fast["rescorer"])
    for name in (FAST_RESCORER_NAME, FAST_FIRST_STAGE_NAME):
        (bundle / name).unlink()
        (bundle / name).write_bytes((trained / name).read_bytes())
    return bundle


def default_model_copy(tmp_path: Path, **fast_settings) -> Path:
    """The embedded default model's bundle in ``tmp_path / "bundle"``, its files linked, its
    fast profile's settings (``keep_hidden``, ``drop_noscript`` …) set to ``fast_settings``
    (any value, to test the bundle reader's checks; None leaves a setting as it is)."""
    from bench.thresholds import linked_copy
    from pulpie_rt.runtime.model.resolve import embedded_model_dir

    def set_fast(manifest: dict) -> None:
        for key, value in fast_settings.items():
            if value is not None:
                manifest["profiles"]["fast"][key] = value

    return linked_copy(embedded_model_dir(), tmp_path / "bundle", set_fast)


SERVE_START_TIMEOUT_S = 180


def start_server(tmp_path_factory, *options: str, profile: str | None = "accurate",
                 env: dict | None = None):
    """``pulpie-rt serve`` with one extraction thread and the embedded default model, offline,
    ready; its ``accurate`` profile unless told otherwise (None: the model's default,
    ``fast``): the transformer's batches are what the limits, timeouts and shutdown tests
    load. ``env`` is added to the service's environment."""
    from pulpie_rt.integrations.serve.process import LocalServer

    profile_options = [] if profile is None else ["--profile", profile]
    server = LocalServer(["--workers", "1", *profile_options, *options],
                         tmp_path_factory.mktemp("serve") / "serve.log",
                         env={"HF_HUB_OFFLINE": "1", "PULPIE_RT_MODEL": None, **(env or {})})
    try:
        server.wait_ready(SERVE_START_TIMEOUT_S)
    except BaseException:
        server.stop()
        raise
    return server


def pages_counted(index: Path) -> int:
    """The pages a run's index counts as done (0 before it has any)."""
    if not index.exists():
        return 0
    db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    except sqlite3.OperationalError:  # its tables not yet created
        return 0
    finally:
        db.close()


# a record field's type (runtime.flow.schema's TYPES) as the JSON value it holds
_FIELD_VALUE_TYPES = {"string": str, "integer": int, "id": (str, int, float), "labels": dict,
                      "strings": list}


def check_record(record: dict, fields) -> None:
    """``record`` has exactly ``fields`` (``runtime.flow.schema.Field``\\ s), in their order,
    each holding a value of its type (None only where the field is nullable)."""
    assert list(record) == [f.name for f in fields], (list(record), [f.name for f in fields])
    for f in fields:
        value = record[f.name]
        if value is None:
            assert f.nullable, (f.name, record)
        else:
            assert isinstance(value, _FIELD_VALUE_TYPES[f.type]), (f.name, value)
            assert not (f.type == "integer" and isinstance(value, bool)), (f.name, value)
            if f.type == "labels":
                assert all(isinstance(k, str) and v in ("main", "other")
                           for k, v in value.items()), (f.name, value)
