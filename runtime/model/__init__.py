"""The model layer: a model name or path -> a bundle on disk (``resolve``, with ``hub`` for the
published checkpoints) -> a backend that runs batches through an engine (``backends``).
Imports the stages, never the page flow above it."""
