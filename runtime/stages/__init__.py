"""The stages a page goes through, one module each, plain functions over plain data:

    simplify -> blocks -> tokens -> chunks -> batches -> (engine) -> labels -> reconstruct
    -> markdown

``features`` and ``rescore`` are the embedded default model's side stage (block features read
from the page, a tree ensemble over them) before ``labels``. Stages import only
``pulpie_rt.runtime.constants`` / ``native`` and each other, never the model, flow or I/O layers.
"""
