#!/usr/bin/env python3
"""Writes the safetensors seed corpus (tests/fuzz/corpus/, a few KB in all).

Files named valid_* must parse; files named invalid_* must be rejected with an error.
The unit test tests/safetensors/ runs the reader over every file and checks exactly
that, and the libFuzzer target (tests/fuzz/safetensors_fuzzer.cpp) starts from them.
Only the standard library is used, so /usr/bin/python3 runs it. Deterministic.
"""
import json
import pathlib
import struct

OUT = pathlib.Path(__file__).resolve().parent / "corpus"


def file_bytes(header, data=b"", pad=True, raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def main():
    OUT.mkdir(exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    f32 = struct.pack("<6f", 1.0, -2.0, 0.5, 3.25, -0.125, 7.0)
    two = {"a": entry("F32", [2, 3], 0, 24), "b": entry("I64", [2], 24, 40)}
    two_data = f32 + struct.pack("<2q", 5, -9)
    cases = {
        "valid_two_tensors": file_bytes(two, two_data),
        "valid_metadata": file_bytes({"__metadata__": {"format": "pt"}, **two}, two_data),
        "valid_empty": file_bytes({}),
        "valid_scalar_and_zero_size": file_bytes(
            {"s": entry("F64", [], 0, 8), "z": entry("U8", [0, 4], 8, 8)}, struct.pack("<d", 2.5)),
        "valid_half_types": file_bytes(
            {"h": entry("F16", [2], 0, 4), "bh": entry("BF16", [2], 4, 8)},
            struct.pack("<2H", 0x3C00, 0xC000) + struct.pack("<2H", 0x3F80, 0xC040)),
        "valid_unpadded": file_bytes({"u": entry("U32", [1], 0, 4)}, b"\x01\x00\x00\x00", pad=False),
        "invalid_empty_file": b"",
        "invalid_short_length": b"\x10\x00\x00",
        "invalid_header_past_end": struct.pack("<Q", 1 << 40) + b"{}",
        "invalid_header_length_max": struct.pack("<Q", 0xFFFFFFFFFFFFFFFF) + b"{}      ",
        "invalid_not_json": file_bytes(None, raw_header=b"{not json"),
        "invalid_not_object": file_bytes(None, raw_header=b"[1,2,3]"),
        "invalid_truncated_data": file_bytes(two, two_data[:30]),
        "invalid_trailing_bytes": file_bytes(two, two_data + b"xx"),
        "invalid_overlap": file_bytes({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)}, bytes(12)),
        "invalid_gap": file_bytes({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}, bytes(12)),
        "invalid_unknown_dtype": file_bytes({"a": entry("F33", [1], 0, 4)}, bytes(4)),
        "invalid_shape_mismatch": file_bytes({"a": entry("F32", [3], 0, 8)}, bytes(8)),
        "invalid_shape_overflow": file_bytes(
            {"a": entry("F32", [1 << 32, 1 << 32, 2], 0, 8)}, bytes(8)),
        "invalid_bytes_overflow": file_bytes({"a": entry("F64", [1 << 62], 0, 8)}, bytes(8)),
        "invalid_negative_offset": file_bytes({"a": entry("U8", [1], -1, 0)}, bytes(1)),
        "invalid_float_shape": file_bytes(None, raw_header=b'{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}',
                                          data=bytes(1)),
        "invalid_end_before_begin": file_bytes({"a": entry("U8", [0], 4, 0)}, bytes(4)),
        "invalid_missing_field": file_bytes({"a": {"dtype": "U8", "shape": [1]}}, bytes(1)),
        "invalid_extra_field": file_bytes({"a": {**entry("U8", [1], 0, 1), "x": 1}}, bytes(1)),
        "invalid_duplicate_key": file_bytes(
            None, raw_header=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                             b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', data=bytes(1)),
        "invalid_metadata_not_string": file_bytes({"__metadata__": {"k": 1}}),
        "invalid_offsets_shape": file_bytes({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0]}}, bytes(1)),
    }
    for name, content in cases.items():
        (OUT / name).write_bytes(content)
    print(f"wrote {len(cases)} files, {sum(map(len, cases.values()))} bytes, into {OUT}")


if __name__ == "__main__":
    main()
