#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/sampler-report.py FILE [BINARY]: profile of a libooo-sampler.so file
(bench/sampler.c). BINARY (default build/oood) is the oood the samples came
from, with its symbols; addresses are resolved with addr2line. Prints the flat
profile by leaf function (main thread), the leaves in other libraries charged
to the first oood function found on the stack, an inclusive profile (a
function counted once per sample where it is the leaf or one of the callers),
and the other threads' share."""
import collections
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    binary = sys.argv[2] if len(sys.argv) > 2 else "build/oood"
    maps, samples, ysym, start = [], [], {}, 0
    with open(path) as f:
        for line in f:
            w = line.split()
            if w[0] == "map" and len(w) >= 6:
                lo, hi = (int(x, 16) for x in w[1].split("-"))
                maps.append((lo, hi, int(w[3], 16), w[-1] if len(w) >= 7 else "[anon]"))
            elif w[0] == "start" and len(w) == 2:
                start = int(w[1])
            elif w[0] == "y" and len(w) == 3:
                ysym[int(w[1], 16)] = w[2].split("+")[0]
            elif w[0] == "s" and len(w) >= 4:
                samples.append((int(w[1]), [int(x, 16) for x in w[2:]]))
    if start:
        print("%d samples before the start mark left out" % start)
        samples = samples[start:]
    if not samples:
        sys.exit("%s: no samples" % path)
    pid = int(path.rsplit("-", 1)[-1].split(".")[0]) if "-" in path else None

    def where(a):
        for lo, hi, off, name in maps:
            if lo <= a < hi:
                return name, a - lo + off
        return "?", a

    # resolve every address of the main binary in one addr2line run
    ours = set()
    for _, pcs in samples:
        for a in pcs:
            if a:
                name, off = where(a)
                if name.endswith("/oood") or name == binary:
                    ours.add(off)
    ours = sorted(ours)
    sym = {}
    if ours:
        out = subprocess.run(["addr2line", "-f", "-C", "-e", binary] + ["%x" % o for o in ours],
                             capture_output=True, text=True).stdout.split("\n")
        for i, o in enumerate(ours):
            sym[o] = out[2 * i] if 2 * i < len(out) else "?"

    def name_of(a):
        name, off = where(a)
        if off in sym and (name.endswith("/oood") or name == binary):
            return sym[off]
        lib = name.rsplit("/", 1)[-1]
        return "[%s %s]" % (lib, ysym[a]) if a in ysym else "[" + lib + "]"

    main_s = [pcs for tid, pcs in samples if pid is None or tid == pid]
    other = len(samples) - len(main_s)
    n = len(main_s)
    print("%d samples, %d on the main thread, %d (%.1f%%) on other threads" %
          (len(samples), n, other, 100.0 * other / len(samples)))
    flat = collections.Counter(name_of(p[0]) for p in main_s)
    print("\nflat (leaf), main thread:")
    for k, v in flat.most_common(40):
        print("  %6.2f%%  %6d  %s" % (100.0 * v / n, v, k))
    ext = collections.Counter()
    for p in main_s:
        leaf = name_of(p[0])
        if leaf.startswith("["):
            caller = name_of(p[1]) if p[1] else "?"
            ext[leaf + " <- " + caller] += 1
    print("\nleaves outside oood, by the first oood function on the stack:")
    for k, v in ext.most_common(30):
        print("  %6.2f%%  %6d  %s" % (100.0 * v / n, v, k))
    inc = collections.Counter()
    for p in main_s:
        inc.update(set(name_of(a) for a in p if a))
    print("\ninclusive (leaf or caller on the stack), main thread:")
    for k, v in inc.most_common(40):
        print("  %6.2f%%  %6d  %s" % (100.0 * v / n, v, k))


if __name__ == "__main__":
    main()
