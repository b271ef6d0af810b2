"""The readable specification of the stages the compiled core (``core/``) runs, in Python: the
oracle the core is tested against (``tests/test_native.py``, ``tests/test_features.py`` and the
``parity`` commands: ``parity/native_core.py``, ``parity/features_parity.py`` …),
never run by the runtime.

- ``dom_spec``: lexbor's parse and serialization of the raw page and the libxml2-shaped tree of
  that serialization, libxml2's HTML serializer;
- ``simplify_spec``: the segmentation (``simplify``);
- ``reconstruct_spec``: ``extract_main_html``, on lexbor's tree of ``map_html``;
- ``markdown_spec``: the main content's Markdown and plain text;
- ``features_spec``: the default model's block features, on lexbor's tree of ``map_html``;
- ``batches_spec``: the one batcher's grouping (``tests/test_batches.py``);
- ``labels_spec``: label decoding, the reference's SEP rules and a bundle's own decoding
  (``tests/test_labels.py``);
- ``rescore_spec``: the default model's block rescorer on onnxruntime's Python API
  (``tests/test_rescore.py``, ``tests/test_ort_core.py``).
"""
