#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the malformed safetensors files of this folder and EXPECTED.

Each file breaks one rule of the format as libtensorio reads it (README.md
lists them); EXPECTED gives, per file, the part of the error message that
names the rule (and the entry, where there is one). tests/lib and the
Python tests check that every file here is refused with that message.
Run from anywhere: python3 gen.py.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
F32_4 = b'{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]}'


def entry(begin, end):
    return F32_4 % (begin, end)


def write(name, header, data, expect):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    FILES.append((name, expect))


FILES = []
four = b"\0" * 4
eight = b"\0" * 8

# Names.
write("dup-name.safetensors",
      b'{"w":' + entry(0, 4) + b',"w":' + entry(4, 8) + b"}", eight,
      "a duplicate name in entry w")
write("dup-name-same-data.safetensors",
      b'{"w":' + entry(0, 4) + b',"w":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}',
      four, "a duplicate name in entry w")
write("dup-name-escaped.safetensors",
      b'{"w":' + entry(0, 4) + b',"\\u0077":' + entry(4, 8) + b"}", eight,
      "a duplicate name in entry w")
write("dup-name-nul.safetensors",
      b'{"w\\u0000a":' + entry(0, 4) + b',"w\\u0000b":' + entry(4, 8) + b"}", eight,
      "a name with a NUL byte in entry w\\x00a")
write("name-not-utf8.safetensors",
      b'{"w\xff":' + entry(0, 4) + b"}", four,
      "a name that is not UTF-8 in entry w\\xff")
write("name-utf8-truncated.safetensors",
      b'{"w\xe2\x82":' + entry(0, 4) + b"}", four,
      "a name that is not UTF-8 in entry w\\xe2\\x82")
write("name-utf8-overlong.safetensors",
      b'{"w\xc0\x80":' + entry(0, 4) + b"}", four,
      "a name that is not UTF-8 in entry w\\xc0\\x80")
write("name-utf8-surrogate.safetensors",
      b'{"w\xed\xa0\x80":' + entry(0, 4) + b"}", four,
      "a name that is not UTF-8 in entry w\\xed\\xa0\\x80")
write("name-utf8-above-max.safetensors",
      b'{"w\xf4\x90\x80\x80":' + entry(0, 4) + b"}", four,
      "a name that is not UTF-8 in entry w\\xf4\\x90\\x80\\x80")
write("metadata-not-utf8.safetensors",
      b'{"__metadata__":{"format":"p\xfft"},"w":' + entry(0, 4) + b"}", four,
      "a __metadata__ value that is not UTF-8 in entry format")

# After the JSON object: spaces only.
write("header-trailing-garbage.safetensors",
      b'{"w":' + entry(0, 4) + b"}  x ", four,
      "header bytes after the JSON object that are not spaces")
write("header-trailing-nul.safetensors",
      b'{"w":' + entry(0, 4) + b"}\0\0\0\0", four,
      "header bytes after the JSON object that are not spaces")
write("header-trailing-newline.safetensors",
      b'{"w":' + entry(0, 4) + b"}\n", four,
      "header bytes after the JSON object that are not spaces")
write("header-second-object.safetensors",
      b'{"w":' + entry(0, 4) + b"}{}", four,
      "header bytes after the JSON object that are not spaces")

write("header-single-quotes.safetensors",
      b"{'w':" + entry(0, 4) + b"}", four,
      "the header is not JSON: a single-quoted string")
write("header-comment.safetensors",
      b'{/* a comment */"w":' + entry(0, 4) + b"}", four,
      "the header is not a JSON object")

# The data.
write("gap-before-data.safetensors",
      b'{"a":' + entry(0, 4) + b',"b":' + entry(8, 12) + b"}", b"\0" * 12,
      "a gap before the data of entry b")
write("overlapping-data.safetensors",
      b'{"a":' + entry(0, 4) + b',"b":{"dtype":"F32","shape":[2],"data_offsets":[2,10]}}',
      b"\0" * 10, "overlapping data_offsets in entry b")
write("bytes-after-last-tensor.safetensors",
      b'{"w":' + entry(0, 4) + b"}", eight,
      "4 trailing bytes after the last tensor")
write("offsets-not-dtype-shape.safetensors",
      b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', four,
      "data_offsets do not match dtype and shape in entry w")
write("offsets-past-end.safetensors",
      b'{"w":' + entry(0, 4) + b"}", b"\0\0",
      "data_offsets out of range in entry w")
write("unknown-dtype.safetensors",
      b'{"w":{"dtype":"Q99","shape":[1],"data_offsets":[0,4]}}', four,
      'unknown dtype "Q99" in entry w')
write("entry-not-object.safetensors", b'{"w":[0,4]}', four,
      "needs dtype, shape and data_offsets in entry w")
write("header-not-object.safetensors", b"[1,2]", b"",
      "the header is not a JSON object")

with open(os.path.join(HERE, "EXPECTED"), "w") as f:
    f.write("# file<TAB>part of the error message (gen.py writes this)\n")
    for name, expect in FILES:
        f.write("%s\t%s\n" % (name, expect))
