"""The readable specification of the stages the compiled core (``core/``) runs, in Python: the
oracle the core is tested against (``tests/test_native.py``, ``parity/native_core.py``), never
run by the runtime.

- ``dom_spec``: lexbor's parse and serialization of the raw page and the libxml2-shaped tree of
  that serialization, libxml2's HTML serializer;
- ``simplify_spec``: the segmentation (``simplify``);
- ``reconstruct_spec``: ``extract_main_html``, on lexbor's tree of ``map_html``.
"""
