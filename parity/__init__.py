"""Parity with the reference ``pulpie`` 0.0.2 and between our implementations: golden-file
recorders (``make golden``) and whole-corpus comparison commands. Speed lives in ``bench``."""
