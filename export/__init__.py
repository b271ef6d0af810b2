"""Export: Pulpie checkpoints -> verified ONNX bundles -> TensorRT engines.

``pulpie-rt export`` (``build.export_bundle``) loads a checkpoint strictly (``checkpoint``),
exports it with ``torch.onnx`` (``to_onnx``), checks it against PyTorch on real corpus chunks
(``verify``) and writes the bundle the runtime reads (``pulpie_rt.runtime.model.bundle``).
``pulpie-rt engine`` (``engine``) builds a TensorRT engine with the sequence-length profiles of
``profiles``. ``tiny`` builds the seeded test checkpoint. Only this package imports torch and
transformers, and only inside the functions that need them.
"""
