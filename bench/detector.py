"""The encoding detector: the core's (``core/src/detect.rs``) against charset-normalizer, side
by side on the same pages: real dev and train pages re-encoded into the legacy encodings their
text fits, with no declaration (``eval.reencode``'s ``none`` kind: the detector's case).

A page is read right when the decoding's text equals the page's original text (the encoding's
name may differ where the two read the same, e.g. windows-1252 and ISO-8859-15 on most
pages). Seconds are per page, the whole decision (the core: ``stages.decode.decode``;
charset-normalizer: ``from_bytes(...).best()`` and ``str()`` of it), median of ``--repeat``
runs. The core's character model is counted on the train pages only, so the dev figures are
of pages it has not seen.

    python -m bench.detector [--limit N] [--repeat 3] [--json out.json]

Also prints how many legacy pages are valid UTF-8 (the decision reads a valid UTF-8 page with a
legacy declaration as UTF-8; ``core/src/decode.rs``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

# charset-normalizer's (Python's) codec names that are not Encoding Standard labels
NORMALIZER_LABELS = {"cp932": "shift_jis", "cp949": "euc-kr", "cp950": "big5",
                     "big5hkscs": "big5", "utf_8": "utf-8", "ascii": "windows-1252"}


def main(argv: list[str] | None = None) -> int:
    from charset_normalizer import from_bytes

    from eval.reencode import cases
    from pulpie_rt.corpus import load_pages
    from pulpie_rt.runtime.stages.decode import decode

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="first N pages of each split")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    def core(data: bytes) -> str:
        return decode(data).text

    def normalizer(data: bytes) -> str:
        # its choice read by the standard's decoder of that encoding where it has one, so that
        # Python's codecs (big5, shift_jis: a few characters mapped otherwise) do not count
        # against its choice
        best = from_bytes(data).best()
        if best is None:
            return ""
        label = NORMALIZER_LABELS.get(best.encoding, best.encoding.replace("_", "-"))
        decoded = decode(data, label)
        return decoded.text if decoded.source == "transport" else str(best)

    detectors = {"core": core, "charset-normalizer": normalizer}
    figures: dict = {}
    valid_utf8 = total = 0
    for split in ("dev", "train"):
        pages = list(load_pages(split))[:args.limit]
        split_cases = list(cases(pages, kinds=("none",)))
        for case in split_cases:
            total += 1
            try:
                case.data.decode("utf-8")
                valid_utf8 += 1
            except UnicodeDecodeError:
                pass
        for name, detect in detectors.items():
            right: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            seconds = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                texts = [detect(case.data) for case in split_cases]
                seconds.append(time.perf_counter() - start)
            for case, text in zip(split_cases, texts, strict=True):
                right[case.label][0] += text == case.original
                right[case.label][1] += 1
            figures[(split, name)] = (dict(right), statistics.median(seconds) / len(split_cases))

    labels = sorted({label for (rights, _) in figures.values() for label in rights})
    names = list(detectors)
    for split in ("dev", "train"):
        print(f"{split}: pages read right (of pages), no declaration")
        print(f"  {'encoding':<14}" + "".join(f"{name:>22}" for name in names))
        for label in labels:
            cells = []
            for name in names:
                good, count = figures[(split, name)][0].get(label, [0, 0])
                cells.append(f"{good:>14} of {count:<5}")
            print(f"  {label:<14}" + "".join(cells))
        cells = []
        for name in names:
            rights = figures[(split, name)][0].values()
            good, count = sum(r[0] for r in rights), sum(r[1] for r in rights)
            cells.append(f"{good:>8} of {count:<5}({good / max(count, 1):.1%})")
        print(f"  {'all':<14}" + "".join(f"{c:>22}" for c in cells))
        print(f"  {'ms per page':<14}" + "".join(
            f"{figures[(split, name)][1] * 1e3:>22.2f}" for name in names))
    print(f"legacy pages valid as UTF-8: {valid_utf8} of {total}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {f"{split}/{name}": {"right": rights, "s_per_page": s}
             for (split, name), (rights, s) in figures.items()}
            | {"valid_utf8": [valid_utf8, total]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
