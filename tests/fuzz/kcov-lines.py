#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Map KCOV PCs of tensorio.ko to kmod source lines.

  kcov-lines.py sections KO                  the code sections to trace, "NAME SIZE"
  kcov-lines.py report KO PCS [--also FILE] [--uncovered OUT]

Every instruction of the module belongs to the basic block of the KCOV
call site (a call to __sanitizer_cov_trace_pc, at the start of each
instrumented block) before it in its function; the debug info gives each
instruction's source line. B is the number of lines of kmod/*.c and
kmod/*.h with an instruction (inlined copies included), A the number with
an instruction in a block that ran: a line counts as reached when any of
its code ran, as gcov counts. PCS lists "SECTION OFFSET" per line, the
return addresses KCOV recorded (the call site is 5 bytes before). --also
adds lines reached by other means ("FILE:LINE" per line, e.g. from gcov),
counted where the module has code for them. --uncovered writes the lines
not reached, with their source text.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

CALL = '__sanitizer_cov_trace_pc'


def disasm(ko):
    """{section: [(offset, block)]}: each instruction and the call site
    offset of its block (None before a function's first call site), and
    {section: [call site offsets]}."""
    out = subprocess.run(['objdump', '-dr', '--no-show-raw-insn', ko], check=True,
                         capture_output=True, text=True).stdout
    insns = collections.defaultdict(list)
    sites = collections.defaultdict(list)
    sec = None
    for line in out.splitlines():
        m = re.match(r'Disassembly of section (\S+):', line)
        if m:
            sec = m.group(1)
            continue
        if re.match(r'[0-9a-f]+ <.*>:$', line):
            insns[sec].append(None)	# a function starts
            continue
        m = re.match(r'\s*([0-9a-f]+): R_X86_64_PLT32\s+(\S+)', line)
        if m and sec and m.group(2).split('-')[0] == CALL:
            sites[sec].append(int(m.group(1), 16) - 1)	# the e8 opcode
            continue
        m = re.match(r'\s*([0-9a-f]+):\t', line)
        if m and sec:
            insns[sec].append(int(m.group(1), 16))
    blocks = {}
    for sec, lst in insns.items():
        marks = set(sites[sec])
        res, cur, first = [], None, []
        for off in lst + [None]:
            if off is None:	# a function ends: its prologue joins its first block
                res.extend((o, cur) for o in first)
                first, cur = [], None
                continue
            if off in marks:
                if cur is None:
                    res.extend((o, off) for o in first)
                    first = []
                cur = off
            if cur is None:
                first.append(off)
            else:
                res.append((off, cur))
        blocks[sec] = res
    return blocks, sites


def callsites(ko):
    return disasm(ko)[1]


def sizes(ko):
    out = subprocess.run(['readelf', '-SW', ko], check=True, capture_output=True,
                         text=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r'\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)', line)
        if m:
            res[m.group(1)] = int(m.group(2), 16)
    return res


def lines_of(ko, sec, offs):
    """[(file, line)] of each offset in section sec (None outside kmod)."""
    p = subprocess.run(['addr2line', '-e', ko, '-j', sec],
                       input=''.join('%x\n' % o for o in offs), check=True,
                       capture_output=True, text=True)
    res = []
    for loc in p.stdout.splitlines():
        loc = loc.split(' (discriminator')[0]
        path, _, line = loc.rpartition(':')
        ok = os.path.basename(os.path.dirname(path)) == 'kmod' and line.isdigit()
        res.append((os.path.basename(path), int(line)) if ok else None)
    return res


def block_lines(ko):
    """{(section, call site): {(file, line)}} of kmod code, and every line."""
    res = collections.defaultdict(set)
    total = set()
    for sec, lst in disasm(ko)[0].items():
        for (off, blk), fl in zip(lst, lines_of(ko, sec, [o for o, _ in lst])):
            if fl:
                total.add(fl)
                res[(sec, blk)].add(fl)
    return res, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('cmd', choices=['sections', 'report'])
    ap.add_argument('ko')
    ap.add_argument('pcs', nargs='?')
    ap.add_argument('--also', action='append', default=[])
    ap.add_argument('--uncovered')
    ap.add_argument('--src', default=os.path.join(os.path.dirname(__file__), '../../kmod'))
    a = ap.parse_args()
    if a.cmd == 'sections':
        sz = sizes(a.ko)
        for sec in sorted(callsites(a.ko)):
            print('%s %x' % (sec, sz[sec]))
        return 0
    blocks, total = block_lines(a.ko)
    hit = set()
    with open(a.pcs) as f:
        for line in f:
            sec, off = line.split()
            hit |= blocks.get((sec, int(off, 16) - 5), set())
    for extra in a.also:
        with open(extra) as f:
            for line in f:
                name, _, n = line.strip().rpartition(':')
                if (name, int(n)) in total:
                    hit.add((name, int(n)))
    pct = 100.0 * len(hit) / len(total) if total else 0.0
    print('# fuzz: kmod line coverage %.1f%% (%d of %d lines)' % (pct, len(hit), len(total)))
    if a.uncovered:
        with open(a.uncovered, 'w') as out:
            out.write('# kmod lines with code that no input reached\n')
            for name in sorted({n for n, _ in total}):
                miss = sorted(ln for n, ln in total - hit if n == name)
                if not miss:
                    continue
                try:
                    with open(os.path.join(a.src, name)) as f:
                        text = f.read().splitlines()
                except OSError:
                    text = []
                out.write('\n%s: %d of %d lines not reached\n' %
                          (name, len(miss), sum(1 for n, _ in total if n == name)))
                for ln in miss:
                    src = text[ln - 1].strip() if ln <= len(text) else ''
                    out.write('  %s:%d\t%s\n' % (name, ln, src))
    return 0


if __name__ == '__main__':
    sys.exit(main())
