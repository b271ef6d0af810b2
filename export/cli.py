"""``pulpie-rt export`` and ``pulpie-rt engine`` (registered by ``pulpie_rt.cli``)."""

from __future__ import annotations

import argparse
import sys

from .profiles import GPU_PRESETS
from .to_onnx import ATTENTIONS


def _print_err(message: str) -> None:
    print(message, file=sys.stderr)


def cmd_export(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.model.bundle import BundleError
    from pulpie_rt.runtime.model.hub import HubError

    from .build import export_bundle
    from .checkpoint import CheckpointError
    from .verify import VerificationError

    try:
        out = export_bundle(args.model, args.out, precision=args.precision,
                            verify=not args.no_verify, max_tokens=args.max_tokens,
                            attention=args.attention)
    except (CheckpointError, HubError, VerificationError, BundleError, FileNotFoundError) as exc:
        _print_err(f"pulpie-rt export: {exc}")
        return 2
    print(f"bundle ready: {out}")
    return 0


def cmd_engine(args: argparse.Namespace) -> int:
    from pulpie_rt.runtime.model.bundle import BundleError

    from .engine import EngineMismatchError, EngineUnavailableError, run_engine_command

    try:
        entry = run_engine_command(args.bundle, gpu=args.gpu, precision=args.precision,
                                   device=args.device)
    except EngineUnavailableError as exc:
        _print_err(str(exc))
        return 3
    except (EngineMismatchError, BundleError) as exc:
        _print_err(f"pulpie-rt engine: {exc}")
        return 2
    print(f"engines ready: {args.bundle}/{entry['folder']} ({entry['gpu']}, {entry['precision']}, "
          f"{len(entry['profiles'])} profiles, ONNX Runtime {entry['onnxruntime']})")
    return 0


def register(subparsers) -> None:
    export = subparsers.add_parser(
        "export", help="checkpoint -> verified ONNX bundle",
        description="Export a Pulpie checkpoint (orange-small|orange-base|orange-large, "
                    "small|base|large, a hub id or a local HF directory) to an ONNX bundle "
                    "verified against PyTorch on real corpus pages.")
    export.add_argument("model", help="model name, hub id or checkpoint directory")
    export.add_argument("--out", required=True, help="bundle directory to write")
    export.add_argument("--precision", choices=["fp32", "fp16"], default="fp32")
    export.add_argument("--no-verify", action="store_true",
                        help="skip the PyTorch/ONNX Runtime parity check")
    export.add_argument("--max-tokens", type=int, default=8192,
                        help="chunk size the model was trained on (default 8192, the Orange "
                             "models')")
    export.add_argument("--attention", choices=ATTENTIONS, default="unfused",
                        help="fused: one ONNX Runtime MultiHeadAttention node per layer, run "
                             "as flash attention on CUDA, and no padding mask: the engine "
                             "gives it one unpadded chunk per model call (for GPUs)")
    export.set_defaults(func=cmd_export)

    engine = subparsers.add_parser(
        "engine", help="ONNX bundle -> TensorRT engines (NVIDIA GPU)",
        description="Build the TensorRT engines the engine runs with backend tensorrt (one per "
                    "sequence-length bucket, ONNX Runtime's TensorRT provider) for the GPU of "
                    "this machine, into the bundle's tensorrt/<gpu>/ folder.")
    engine.add_argument("bundle", help="bundle directory written by `pulpie-rt export`")
    engine.add_argument("--gpu", choices=[*GPU_PRESETS, "auto"], default="auto")
    engine.add_argument("--precision", choices=["fp16", "fp32"], default="fp16")
    engine.add_argument("--device", type=int, default=0, help="the GPU to build on (default 0)")
    engine.set_defaults(func=cmd_engine)
