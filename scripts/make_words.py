"""Builds python/routecore/data/words/: the word frequencies typo repair weighs its readings by
(routecore.decide.words, routecore.decide.spelling).

Source: the dictionaries of pyspellchecker 0.9.1 (MIT, Tyler Barrus; word counts taken from
OpenSubtitles subtitles, Lison and Tiedemann, LREC 2016), read from the installed package:
``pip install pyspellchecker==0.9.1``. For each language of :data:`LANGUAGES`, the
:data:`KEEP` most frequent words made of letters only, in lower case, with their counts. The
package's LICENSE is copied beside them.

Each ``{lang}.txt.gz`` holds three lines: a JSON header (source, the count of every word of the
source dictionary, the words kept), the words by falling count separated by spaces, and their
counts. ``top.json`` holds each language's :data:`TOP` most frequent words (which languages a
router's exemplars are in). The same text on every run (gzip without a time; ``--check`` compares text).

Run: ``python scripts/make_words.py`` (``--check``: fail if the files differ from what it would write).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from importlib import metadata, resources
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "python" / "routecore" / "data" / "words"
VERSION = "0.9.1"
#: The bundled background set's languages that pyspellchecker has a dictionary for.
LANGUAGES = ("en", "fr", "de", "es", "it", "pt")
#: Words kept per language (the rest of a long tail of names and compounds reads as unknown).
KEEP = 100_000
#: Words per language in top.json.
TOP = 200


def build() -> dict[str, bytes]:
    if metadata.version("pyspellchecker") != VERSION:
        sys.exit(f"make_words: needs pyspellchecker=={VERSION}")
    out: dict[str, bytes] = {}
    top: dict[str, list[str]] = {}
    for lang in LANGUAGES:
        raw = resources.files("spellchecker").joinpath("resources", f"{lang}.json.gz").read_bytes()
        counts: dict[str, int] = {}
        total = 0
        for word, n in json.loads(gzip.decompress(raw)).items():
            total += n
            w = word.lower()
            if w.isalpha():
                counts[w] = counts.get(w, 0) + n
        kept = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:KEEP]
        head = {"source": f"pyspellchecker {VERSION} ({lang}.json.gz)", "total": total, "words": len(kept)}
        text = "\n".join([json.dumps(head), " ".join(w for w, _ in kept), " ".join(str(n) for _, n in kept)])
        out[f"{lang}.txt.gz"] = gzip.compress(text.encode(), compresslevel=9, mtime=0)
        top[lang] = [w for w, _ in kept[:TOP]]
    out["top.json"] = (json.dumps(top, ensure_ascii=False, indent=0) + "\n").encode()
    lic = metadata.distribution("pyspellchecker").read_text("licenses/LICENSE") or metadata.distribution(
        "pyspellchecker"
    ).read_text("LICENSE")
    if not lic:
        sys.exit("make_words: pyspellchecker's LICENSE not found")
    out["LICENSE"] = lic.encode()
    return out


def _text(data: Path | bytes, name: str) -> bytes:
    """A file's content, decompressed (another zlib may compress the same text to other bytes)."""
    raw = data.read_bytes() if isinstance(data, Path) else data
    return gzip.decompress(raw) if name.endswith(".gz") else raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the files differ from a fresh build")
    a = ap.parse_args()
    files = build()
    if a.check:
        bad = [n for n, b in files.items() if not (OUT / n).is_file() or _text(OUT / n, n) != _text(b, n)]
        if bad:
            sys.exit(f"make_words: {', '.join(bad)} differ from a fresh build")
        print("make_words: up to date")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (OUT / name).write_bytes(data)
        print(f"wrote {OUT / name} ({len(data) // 1024} KiB)")


if __name__ == "__main__":
    main()
