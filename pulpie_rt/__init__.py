"""pulpie-rt: optimized, torch-free inference runtime for Pulpie content-extraction models.

Data flow (every stage runs in the compiled core, ``core/``; the Python entry points of those a
caller may run alone are under ``pulpie_rt.runtime.stages``; batching and the model are the
core's engine)::

    html -> simplify -> blocks -> tokens -> chunks -> batches -> engine -> labels
         -> reconstruct -> markdown

    from pulpie_rt import Extractor
    print(Extractor("path/to/bundle").extract(html).markdown)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulpie_rt.version import __version__

if TYPE_CHECKING:
    from pulpie_rt.runtime.flow.extractor import ExtractionError, Extractor
    from pulpie_rt.runtime.flow.pages import ExtractionResult, PageInput, PageResult
    from pulpie_rt.runtime.flow.pipeline import Pipeline
    from pulpie_rt.runtime.stages.simplify import simplify

__all__ = [
    "ExtractionError",
    "ExtractionResult",
    "Extractor",
    "PageInput",
    "PageResult",
    "Pipeline",
    "simplify",
    "__version__",
]

# the public names by their module, imported where first asked for (PEP 562): a process that
# imports only a part of the package (the console script, whose ``run`` sets the collector
# before it imports the engine: cli.py) does not import all of it with the package
_MODULE_OF = {
    "ExtractionError": "pulpie_rt.runtime.flow.extractor",
    "Extractor": "pulpie_rt.runtime.flow.extractor",
    "ExtractionResult": "pulpie_rt.runtime.flow.pages",
    "PageInput": "pulpie_rt.runtime.flow.pages",
    "PageResult": "pulpie_rt.runtime.flow.pages",
    "Pipeline": "pulpie_rt.runtime.flow.pipeline",
    "simplify": "pulpie_rt.runtime.stages.simplify",
}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
