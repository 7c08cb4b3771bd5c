#!/usr/bin/env python3
"""Writes lib/src/unicode_tables.inc: the Unicode data the core's NFC
normalizer and case folding need (lib/src/unicode.cpp), from Debian's
`unicode-data` package (/usr/share/unicode).

Tables (each a sorted array of packed 64-bit entries, binary-searched):
  kCombiningClass   first << 29 | last << 8 | ccc    ranges with ccc != 0
  kDecomposition    cp << 42 | d1 << 21 | d2         canonical mappings
                                                     (d2 = 0: a singleton)
  kComposition      d1 << 42 | d2 << 21 | cp         primary composites: the
                                                     pairs not in
                                                     Full_Composition_Exclusion
  kCaseFold         first << 43 | count << 32 |      runs of CaseFolding.txt
                    (stride - 1) << 31 |             status C+S mappings with
                    (delta + 2^30)                   one delta, every code
                                                     point or every second one
Hangul syllables are algorithmic and not listed.

Usage: gen-unicode-tables.py [--data DIR] [--check | --out FILE]
  --check  exits 1 if the checked-in file differs from what this writes,
           77 (skipped) if the data is not installed, unless CI is set
"""
import bisect
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "lib", "src", "unicode_tables.inc")


def data_lines(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                yield [x.strip() for x in line.split(";")]


def version_of(path):
    with open(path, encoding="utf-8") as f:
        m = re.match(r"# \S+-(\d+\.\d+\.\d+)\.txt", f.readline())
    if not m:
        sys.exit(f"gen-unicode-tables: no version line in {path}")
    return m.group(1)


def code_range(field):
    if ".." in field:
        a, b = field.split("..")
        return range(int(a, 16), int(b, 16) + 1)
    return range(int(field, 16), int(field, 16) + 1)


def fold_runs(fold):
    """The mappings as runs (first, count, stride, delta): code points first,
    first + stride, ... that all fold by adding delta. Checked here against
    the mapping for every code point, as unicode.cpp looks them up."""
    items = sorted(fold.items())
    runs = []
    i = 0
    while i < len(items):
        cp, t = items[i]
        d = t - cp
        stride = 1
        if i + 1 < len(items) and items[i + 1][1] - items[i + 1][0] == d and items[i + 1][0] - cp == 2:
            stride = 2
        n = 1
        while (i + n < len(items) and n < 2047 and items[i + n][0] == cp + n * stride
               and items[i + n][1] - items[i + n][0] == d):
            n += 1
        runs.append((cp, n, stride, d))
        i += n
    firsts = [r[0] for r in runs]
    for c in range(0x110000):
        k = bisect.bisect_right(firsts, c) - 1
        got = c
        if k >= 0:
            a, n, st, d = runs[k]
            if c < a + n * st and (c - a) % st == 0:
                got = c + d
        assert got == fold.get(c, c), f"fold runs disagree at U+{c:04X}"
    return runs


def generate(data):
    files = {n: os.path.join(data, n + ".txt") for n in
             ("UnicodeData", "CompositionExclusions", "DerivedNormalizationProps", "CaseFolding")}
    versions = {version_of(files[n]) for n in ("CompositionExclusions", "DerivedNormalizationProps", "CaseFolding")}
    if len(versions) != 1:
        sys.exit(f"gen-unicode-tables: mixed Unicode versions {sorted(versions)}")
    version = versions.pop()

    ccc = {}
    decomp = {}
    for f in data_lines(files["UnicodeData"]):
        cp = int(f[0], 16)
        if int(f[3]):
            ccc[cp] = int(f[3])
        if f[5] and not f[5].startswith("<"):
            parts = [int(x, 16) for x in f[5].split()]
            assert 1 <= len(parts) <= 2, f
            decomp[cp] = parts

    exclusions = set()
    for f in data_lines(files["DerivedNormalizationProps"]):
        if f[1] == "Full_Composition_Exclusion":
            exclusions.update(code_range(f[0]))
    # The explicit list must be part of the derived one.
    for f in data_lines(files["CompositionExclusions"]):
        assert set(code_range(f[0])) <= exclusions, f

    fold = {}
    for f in data_lines(files["CaseFolding"]):
        if f[1] in ("C", "S"):
            target = [int(x, 16) for x in f[2].split()]
            assert len(target) == 1, f
            fold[int(f[0], 16)] = target[0]

    ranges = []
    for cp in sorted(ccc):
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == ccc[cp]:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, ccc[cp]])

    comp = []
    for cp, parts in decomp.items():
        if len(parts) == 2 and cp not in exclusions:
            comp.append((parts[0], parts[1], cp))

    def table(name, entries, comment):
        out = [f"// {comment}", f"inline constexpr std::uint64_t {name}[] = {{"]
        cells = [f"0x{e:016x}ull," for e in sorted(entries)]
        for i in range(0, len(cells), 4):
            out.append("    " + " ".join(cells[i:i + 4]))
        out.append("};")
        return out

    lines = [
        "// Generated by tools/gen-unicode-tables.py from the Unicode Character",
        f"// Database {version} (Debian package unicode-data). Do not edit: regenerate.",
        "// lib/src/unicode.cpp reads these; ctest meta/unicode_tables checks them.",
        "",
        f'inline constexpr char kUnicodeVersion[] = "{version}";',
        "",
    ]
    lines += table("kCombiningClass", [a << 29 | b << 8 | c for a, b, c in ranges],
                   "first << 29 | last << 8 | ccc: ranges of code points with a nonzero class")
    lines.append("")
    lines += table("kDecomposition", [cp << 42 | p[0] << 21 | (p[1] if len(p) == 2 else 0)
                                      for cp, p in decomp.items()],
                   "cp << 42 | d1 << 21 | d2: canonical decomposition mappings (d2 = 0: singleton)")
    lines.append("")
    lines += table("kComposition", [a << 42 | b << 21 | cp for a, b, cp in comp],
                   "d1 << 42 | d2 << 21 | cp: primary composites (no Full_Composition_Exclusion)")
    lines.append("")
    runs = fold_runs(fold)
    lines += table("kCaseFold", [a << 43 | n << 32 | (st - 1) << 31 | (d + (1 << 30)) for a, n, st, d in runs],
                   "first << 43 | count << 32 | (stride - 1) << 31 | (delta + 2^30): CaseFolding.txt status C+S")
    return "\n".join(lines) + "\n"


def main(argv):
    data = "/usr/share/unicode"
    check = False
    out = OUT
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--data":
            data = args.pop(0)
        elif a == "--check":
            check = True
        elif a == "--out":
            out = args.pop(0)
        else:
            sys.exit(__doc__)
    if not os.path.exists(os.path.join(data, "UnicodeData.txt")):
        msg = f"gen-unicode-tables: {data}/UnicodeData.txt not found (install the unicode-data package)"
        print(msg, file=sys.stderr)
        in_ci = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
        return 1 if in_ci or not check else 77
    text = generate(data)
    if check:
        with open(out, encoding="utf-8") as f:
            if f.read() != text:
                print(f"gen-unicode-tables: {out} differs from the generator's output; regenerate it",
                      file=sys.stderr)
                return 1
        return 0
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
