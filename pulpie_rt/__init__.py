"""pulpie-rt: optimized, torch-free inference runtime for Pulpie content-extraction models.

Data flow (one module per stage, under ``pulpie_rt.runtime``)::

    html -> simplify -> blocks -> tokens -> chunks -> batches -> engine -> labels
         -> reconstruct -> markdown

    from pulpie_rt import Extractor
    print(Extractor("path/to/bundle").extract(html).markdown)
"""

from pulpie_rt.runtime.extractor import ExtractionError, Extractor
from pulpie_rt.runtime.pages import ExtractionResult
from pulpie_rt.runtime.pipeline import PageInput, PageResult, Pipeline
from pulpie_rt.runtime.simplify import simplify

__version__ = "0.1.0"
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
