"""Model-sized ONNX bundles that travel without their weights.

A GPU machine here is reached by copying at most 64 MiB per call, and an Orange-Small-shaped
bundle holds 847 MB of weights (random ones: ``bench/random_checkpoint.py``; the real
checkpoints are on a hub that cannot be reached). Speed depends on a model's shape, not on its
weights, so ``strip`` (here, with ``onnx``) moves every large initializer of a bundle's
``model.onnx`` into external data that is not written, and records in ``seeded_weights.json``
how to draw it again: a normal draw with the original tensor's mean and standard deviation,
seeded by the tensor's name. ``restore`` (there, with numpy alone) writes that external data
file back. Every run on the GPU machine — the CPU reference labels included — reads the same
restored files, so label agreement between backends is measured on identical weights.

Tensors are seeded by name and drawn in FP32, then cast to the bundle's type: an FP16 export of
the same checkpoint, stripped ``--like`` the FP32 bundle (whose statistics it then takes for
the weights the two exports name alike), restores to the FP16 rounding of the FP32 bundle's
weights, so FP16 runs are compared with FP32 ones on the same model.

    python -m bench.seeded_weights strip BUNDLE [--like STRIPPED]   # here
    python3 bench/seeded_weights.py restore BUNDLE                            # there: numpy only
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

SPEC_FILE = "seeded_weights.json"
# initializers below this many elements (norms, biases, the classifier, rotary tables) keep
# their exported values inline: they are what the shape's arithmetic does not depend on but a
# sane forward pass does
MIN_SEEDED_ELEMENTS = 1 << 16
# tables that are not weights, kept as exported whatever their size: the GPU graph's rotary
# cos/sin tables (export/gpu_graph.py), computed from positions, not learnt
KEPT_PREFIXES = ("rotary/",)
NUMPY_TYPES = {1: np.float32, 10: np.float16}  # onnx.TensorProto.FLOAT, FLOAT16


def name_seed(name: str) -> int:
    """A tensor's seed: its name's SHA-256, so two exports naming a weight alike draw it alike."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")


def draw(entry: dict) -> np.ndarray:
    """One tensor as ``restore`` writes it: N(mean, std) in FP32, cast to the tensor's type."""
    rng = np.random.default_rng(name_seed(entry["name"]))
    size = int(np.prod(entry["shape"], dtype=np.int64))
    values = rng.standard_normal(size, dtype=np.float32) * np.float32(entry["std"])
    values += np.float32(entry["mean"])
    return values.astype(NUMPY_TYPES[entry["data_type"]]).reshape(entry["shape"])


def strip(bundle: str | Path, like: str | Path | None = None) -> dict:
    """Rewrite ``bundle/model.onnx`` with its large initializers as unwritten external data;
    ``like``: a stripped bundle whose statistics the tensors named alike take."""
    # here, not at the top: `restore` runs on a GPU machine with numpy alone
    import onnx
    from onnx import numpy_helper

    from pulpie_rt.runtime.model.bundle import edit_manifest

    bundle = Path(bundle)
    stats = {}
    if like is not None:
        like_spec = json.loads((Path(like) / SPEC_FILE).read_text(encoding="utf-8"))
        stats = {t["name"]: (t["mean"], t["std"]) for t in like_spec["tensors"]}
    model_path = bundle / "model.onnx"
    data_name = "model.onnx.data"
    model = onnx.load(str(model_path), load_external_data=True)
    entries, offset = [], 0
    for tensor in model.graph.initializer:
        if tensor.data_type not in NUMPY_TYPES:
            continue
        values = numpy_helper.to_array(tensor)
        if values.size < MIN_SEEDED_ELEMENTS or tensor.name.startswith(KEPT_PREFIXES):
            continue
        as_fp32 = values.astype(np.float32)
        mean, std = stats.get(tensor.name, (float(as_fp32.mean()), float(as_fp32.std())))
        entry = {"name": tensor.name, "data_type": tensor.data_type, "shape": list(values.shape),
                 "mean": mean, "std": std,
                 "offset": offset, "length": values.nbytes}
        entries.append(entry)
        tensor.ClearField("raw_data")
        for field in ("float_data", "int32_data"):
            tensor.ClearField(field)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        del tensor.external_data[:]
        for key, value in (("location", data_name), ("offset", str(offset)),
                           ("length", str(values.nbytes))):
            item = tensor.external_data.add()
            item.key, item.value = key, value
        # 4 KiB alignment, as onnx's own external-data writer leaves room for mmap
        offset += (values.nbytes + 4095) // 4096 * 4096
    onnx.save_model(model, str(model_path))
    (bundle / data_name).unlink(missing_ok=True)
    spec = {"data_file": data_name, "data_bytes": offset, "tensors": entries}
    (bundle / SPEC_FILE).write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")

    def with_seeded_weights(manifest: dict) -> None:
        manifest["onnx"]["external_data"] = True
        manifest["seeded_weights"] = (f"{len(entries)} initializers drawn again by "
                                      f"bench/seeded_weights.py restore; labels mean nothing")

    edit_manifest(bundle, with_seeded_weights)
    return spec


def restore(bundle: str | Path) -> Path:
    """Write the external data file ``strip`` left out; returns its path."""
    bundle = Path(bundle)
    spec = json.loads((bundle / SPEC_FILE).read_text(encoding="utf-8"))
    path = bundle / spec["data_file"]
    with open(path, "wb") as out:
        out.truncate(spec["data_bytes"])
        for entry in spec["tensors"]:
            values = draw(entry)
            if values.nbytes != entry["length"]:
                raise ValueError(f"{bundle}: {entry['name']} draws {values.nbytes} bytes, "
                                 f"the graph expects {entry['length']}")
            out.seek(entry["offset"])
            out.write(values.tobytes())
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    like = None
    if len(args) == 4 and args[0] == "strip" and args[2] == "--like":
        like, args = args[3], args[:2]
    if len(args) != 2 or args[0] not in ("strip", "restore"):
        print("usage: seeded_weights.py strip BUNDLE [--like STRIPPED] | restore BUNDLE",
              file=sys.stderr)
        return 2
    if args[0] == "strip":
        spec = strip(args[1], like)
        print(f"{args[1]}: {len(spec['tensors'])} initializers ({spec['data_bytes'] / 1e6:.0f} MB)"
              f" to draw again; model.onnx is the graph")
    else:
        print(f"{restore(args[1])}: written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
