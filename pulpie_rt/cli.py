"""``pulpie-rt`` console script: each stage's package registers its own sub-commands."""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from pulpie_rt.version import __version__

# Each module defines ``register(subparsers)`` adding its commands; each command sets
# ``func(args) -> int``.
_COMMAND_MODULES = (
    "pulpie_rt.runtime.cli",  # extract, inspect, run
    "pulpie_rt.export.cli",  # export, engine
    "pulpie_rt.integrations.serve.cli",  # serve
)
# the module of each command: a command imports only its own (the export's and the
# service's imports would cost `pulpie-rt run` a start-up it does not need)
_MODULE_OF_COMMAND = {
    "extract": _COMMAND_MODULES[0], "inspect": _COMMAND_MODULES[0], "run": _COMMAND_MODULES[0],
    "export": _COMMAND_MODULES[1], "engine": _COMMAND_MODULES[1],
    "serve": _COMMAND_MODULES[2],
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of ``command``'s module only."""
    parser = argparse.ArgumentParser(
        prog="pulpie-rt", description="Main-content extraction with Pulpie models, torch-free."
    )
    parser.add_argument("--version", action="version", version=f"pulpie-rt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    modules = (_MODULE_OF_COMMAND[command],) if command in _MODULE_OF_COMMAND else _COMMAND_MODULES
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command ``argv`` (None: the process's own command line, ``sys.argv``)."""
    # The process's own command line (the console script): what the command's imports make
    # lives as long as the process, so no collection runs over it while it is made, and it is
    # frozen (gc.freeze) before the command runs: the collections of the run's pages and the
    # one at exit skip it (a run over no page spent ~6% of its instructions in them). A caller
    # passing argv (tests, another program) keeps its collector as it is.
    own_process = argv is None and gc.isenabled()
    if own_process:
        gc.disable()
    try:
        words = sys.argv[1:] if argv is None else argv
        parser = build_parser(words[0] if words else None)
        args = parser.parse_args(argv)
    finally:
        if own_process:
            gc.freeze()
            gc.enable()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("pulpie-rt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
