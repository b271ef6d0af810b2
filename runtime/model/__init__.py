"""The model layer: a model name or path -> a bundle on disk (``resolve``, with ``hub`` for the
published checkpoints and ``bundle`` for its manifest), and the devices it may run on
(``devices``). Imports the stages, never the page flow above it."""
