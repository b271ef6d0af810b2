"""Readable Python specifications of stages that the compiled core (``core/``) runs: the
oracles the tests and ``pulpie_rt.bench`` parity commands compare the core against."""
