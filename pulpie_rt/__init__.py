"""pulpie-rt: optimized, torch-free inference runtime for Pulpie content-extraction models.

Data flow (one module per stage, under ``pulpie_rt.runtime``)::

    html -> simplify -> blocks -> tokens -> chunks -> batches -> engine -> labels
         -> reconstruct -> markdown
"""

from pulpie_rt.runtime.simplify import simplify

__version__ = "0.1.0"
__all__ = ["simplify", "__version__"]
