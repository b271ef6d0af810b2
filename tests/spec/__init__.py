"""Readable Python specifications of stages that the compiled core (``core/``) runs: the
oracles the tests and the ``pulpie_rt.parity`` commands compare the core against."""
