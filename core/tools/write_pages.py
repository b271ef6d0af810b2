"""Writes a corpus file's pages as the C driver (simplify_pages.c) reads them: per page a
little-endian u32 byte length, then the page as UTF-8 (lone surrogates as `surrogatepass`
writes them, as runtime/native.py passes them).

    python core/tools/write_pages.py dev build/dev.pages
"""

from __future__ import annotations

import struct
import sys

from pulpie_rt.corpus import iter_pages


def main(argv: list[str]) -> int:
    corpus, out_path = argv
    count = 0
    with open(out_path, "wb") as out:
        for page in iter_pages(corpus):
            data = page["html"].encode("utf-8", "surrogatepass")
            out.write(struct.pack("<I", len(data)))
            out.write(data)
            count += 1
    print(f"{count} pages -> {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
