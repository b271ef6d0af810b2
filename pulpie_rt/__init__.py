"""pulpie-rt: optimized, torch-free inference runtime for Pulpie content-extraction models.

Data flow (every stage runs in the compiled core, ``core/``; the Python entry points of those a
caller may run alone are under ``pulpie_rt.runtime.stages``; batching and the model are the
core's engine)::

    html -> simplify -> blocks -> tokens -> chunks -> batches -> engine -> labels
         -> reconstruct -> markdown

    from pulpie_rt import Extractor
    print(Extractor("path/to/bundle").extract(html).markdown)
"""

from pulpie_rt.runtime.flow.extractor import ExtractionError, Extractor
from pulpie_rt.runtime.flow.pages import ExtractionResult, PageInput, PageResult
from pulpie_rt.runtime.flow.pipeline import Pipeline
from pulpie_rt.runtime.stages.simplify import simplify
from pulpie_rt.version import __version__

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
