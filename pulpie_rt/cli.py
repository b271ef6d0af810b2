"""``pulpie-rt`` console script: each stage's package registers its own sub-commands."""

from __future__ import annotations

import argparse
import importlib
import sys

from pulpie_rt.version import __version__

# (module, description): each module defines ``register(subparsers)`` adding its commands,
# each command sets ``func(args) -> int``.
_COMMAND_MODULES = (
    "pulpie_rt.runtime.cli",  # extract, run
    "pulpie_rt.export.cli",  # export, engine
    "pulpie_rt.bench.cli",  # bench
    "pulpie_rt.integrations.serve.cli",  # serve
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulpie-rt", description="Main-content extraction with Pulpie models, torch-free."
    )
    parser.add_argument("--version", action="version", version=f"pulpie-rt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("pulpie-rt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
