#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target: tests/fuzz/corpus/<target>/ (FuzzTargets.h).

Files named valid_* must be accepted by their target and invalid_* rejected with one of the
errors its parser documents; the replay test (tests/fuzz/ReplayTests.cpp, every build)
checks exactly that and the libFuzzer targets start from them. Other files in a corpus
directory (inputs a fuzzer found, crash_* reproducers) are kept: only the generated names
are rewritten. Only the standard library is used, so /usr/bin/python3 runs it.
Deterministic: running it again changes nothing.
"""
import hashlib
import json
import pathlib
import re
import struct

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"


def write(target, cases):
    out = CORPUS / target
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.name.startswith(("valid_", "invalid_")):
            old.unlink()
    for name, content in cases.items():
        assert name.startswith(("valid_", "invalid_")), name
        (out / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    print(f"{target}: {len(cases)} files, {sum(len(c) for c in cases.values())} bytes")


# --- safetensors ---------------------------------------------------------------------

def st_file(header, data=b"", pad=True, raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def st_entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_cases():
    f32 = struct.pack("<6f", 1.0, -2.0, 0.5, 3.25, -0.125, 7.0)
    two = {"a": st_entry("F32", [2, 3], 0, 24), "b": st_entry("I64", [2], 24, 40)}
    two_data = f32 + struct.pack("<2q", 5, -9)
    return {
        "valid_two_tensors": st_file(two, two_data),
        "valid_metadata": st_file({"__metadata__": {"format": "pt"}, **two}, two_data),
        "valid_empty": st_file({}),
        "valid_scalar_and_zero_size": st_file(
            {"s": st_entry("F64", [], 0, 8), "z": st_entry("U8", [0, 4], 8, 8)}, struct.pack("<d", 2.5)),
        "valid_half_types": st_file(
            {"h": st_entry("F16", [2], 0, 4), "bh": st_entry("BF16", [2], 4, 8)},
            struct.pack("<2H", 0x3C00, 0xC000) + struct.pack("<2H", 0x3F80, 0xC040)),
        "valid_unpadded": st_file({"u": st_entry("U32", [1], 0, 4)}, b"\x01\x00\x00\x00", pad=False),
        "invalid_empty_file": b"",
        "invalid_short_length": b"\x10\x00\x00",
        "invalid_header_past_end": struct.pack("<Q", 1 << 40) + b"{}",
        "invalid_header_length_max": struct.pack("<Q", 0xFFFFFFFFFFFFFFFF) + b"{}      ",
        "invalid_not_json": st_file(None, raw_header=b"{not json"),
        "invalid_not_object": st_file(None, raw_header=b"[1,2,3]"),
        "invalid_truncated_data": st_file(two, two_data[:30]),
        "invalid_trailing_bytes": st_file(two, two_data + b"xx"),
        "invalid_overlap": st_file({"a": st_entry("F32", [2], 0, 8), "b": st_entry("F32", [2], 4, 12)}, bytes(12)),
        "invalid_gap": st_file({"a": st_entry("F32", [1], 0, 4), "b": st_entry("F32", [1], 8, 12)}, bytes(12)),
        "invalid_unknown_dtype": st_file({"a": st_entry("F33", [1], 0, 4)}, bytes(4)),
        "invalid_shape_mismatch": st_file({"a": st_entry("F32", [3], 0, 8)}, bytes(8)),
        "invalid_shape_overflow": st_file({"a": st_entry("F32", [1 << 32, 1 << 32, 2], 0, 8)}, bytes(8)),
        "invalid_bytes_overflow": st_file({"a": st_entry("F64", [1 << 62], 0, 8)}, bytes(8)),
        "invalid_negative_offset": st_file({"a": st_entry("U8", [1], -1, 0)}, bytes(1)),
        "invalid_float_shape": st_file(None, raw_header=b'{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}',
                                       data=bytes(1)),
        "invalid_end_before_begin": st_file({"a": st_entry("U8", [0], 4, 0)}, bytes(4)),
        "invalid_missing_field": st_file({"a": {"dtype": "U8", "shape": [1]}}, bytes(1)),
        "invalid_extra_field": st_file({"a": {**st_entry("U8", [1], 0, 1), "x": 1}}, bytes(1)),
        "invalid_duplicate_key": st_file(
            None, raw_header=b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                             b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', data=bytes(1)),
        "invalid_metadata_not_string": st_file({"__metadata__": {"k": 1}}),
        "invalid_offsets_shape": st_file({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0]}}, bytes(1)),
    }


# --- .npy ----------------------------------------------------------------------------

def npy(descr, shape, data, version=1, fortran="False", raw_header=None):
    if raw_header is None:
        dims = "".join(f"{d}, " for d in shape)
        dims = dims[:-2] if len(shape) > 1 else dims[:-1]
        header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({dims}), }}"
    else:
        header = raw_header
    prefix = 10 if version == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode("latin-1") + data


def npy_cases():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    return {
        "valid_f32_2x3": npy("<f4", [2, 3], f32),
        "valid_f64_scalar": npy("<f8", [], struct.pack("<d", 0.5)),
        "valid_f16_vector": npy("<f2", [2], struct.pack("<2H", 0x3C00, 0x7E00)),
        "valid_u8_bytes": npy("|u1", [4], b"\x00\x01\xfe\xff"),
        "valid_i8_little": npy("<i1", [1], b"\x80"),
        "valid_bool": npy("|b1", [3], b"\x00\x01\x01"),
        "valid_u16": npy("<u2", [1], b"\x01\x02"),
        # numpy.save of an ml_dtypes.bfloat16 array: the 2-byte void descriptor, read as bf16.
        "valid_bf16_ml_dtypes": npy("<V2", [2], struct.pack("<2H", 0x3F80, 0x7FC0)),
        "valid_i32_empty": npy("<i4", [0, 3], b""),
        "valid_u32": npy("<u4", [1, 1, 1], struct.pack("<I", 7)),
        "valid_i64": npy("<i8", [2], struct.pack("<2q", -1, 1)),
        "valid_u64": npy("<u8", [1], struct.pack("<Q", 1 << 63)),
        "valid_version2": npy("<f4", [2], struct.pack("<2f", 1, 2), version=2),
        "valid_version3": npy("<f4", [2], struct.pack("<2f", 1, 2), version=3),
        "valid_fortran_1d": npy("<f4", [2], struct.pack("<2f", 1, 2), fortran="True"),
        "valid_keys_reordered": npy(None, None, struct.pack("<f", 1),
                                    raw_header="{'shape': (1,), 'fortran_order': False, 'descr': '<f4', }"),
        "invalid_empty_file": b"",
        "invalid_bad_magic": b"\x93NUMPZ\x01\x00\x10\x00" + b" " * 16,
        "invalid_version4": npy("<f4", [1], struct.pack("<f", 1), version=4),
        "invalid_truncated_header": npy("<f4", [2], b"")[:20],
        "invalid_truncated_version2": b"\x93NUMPY\x02\x00\x10\x00",
        "invalid_truncated_data": npy("<f4", [2, 3], f32[:20]),
        "invalid_trailing_data": npy("<f4", [2], f32),
        "invalid_big_endian": npy(">f4", [1], struct.pack(">f", 1)),
        "invalid_object_dtype": npy("|O", [1], bytes(8)),
        "invalid_complex": npy("<c8", [1], bytes(8)),
        "invalid_void_4_bytes": npy("<V4", [1], bytes(4)),
        "invalid_fortran_2d": npy("<f4", [2, 3], f32, fortran="True"),
        "invalid_shape_text": npy(None, None, b"", raw_header="{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }"),
        "invalid_shape_overflow": npy("<f4", [1 << 32, 1 << 32, 1 << 32], b""),
        # Found by npy_fuzzer: a dimension over 2^64 - 1 escaped as std::out_of_range (stoull).
        "invalid_dimension_over_u64": npy("<f4", [1 << 64], b""),
        "invalid_shape_junk_after_big_number": npy(None, None, b"", raw_header=(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709555161f2'6), }")),
        "invalid_missing_descr": npy(None, None, b"", raw_header="{'fortran_order': False, 'shape': (0,), }"),
        "invalid_missing_shape": npy(None, None, b"", raw_header="{'descr': '<f4', 'fortran_order': False, }"),
        # Once crashed both backends: std::regex overflowed the stack on a header of ~26 KB.
        # Padding with spaces is legal, so a 40 KB header of a valid array must be read.
        "valid_header_40k": npy(None, None, struct.pack("<f", 1),
                                raw_header="{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + " " * 40000),
        "invalid_shape_double_comma": npy(None, None, bytes(256),
                                          raw_header="{'descr': '<f4', 'fortran_order': False, 'shape': (64,,), }"),
        "invalid_duplicate_descr": npy(None, None, struct.pack("<f", 1), raw_header=(
            "{'descr': '<f8', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }")),
        "invalid_data_one_element_short": npy("<f4", [4], struct.pack("<3f", 1, 2, 3)),
    }


# --- JSON op specs ---------------------------------------------------------------------

def spec_cases():
    cases = {}
    # Every shipped example, at a small size (the fuzzer compiles each input to PTX).
    small = {"k": 64, "n": 16, "m": 2, "count": 64,
             "group_size": 32, "block_size": 32, "dim": 64}
    for path in sorted((ROOT / "examples" / "specs").glob("*.json")):
        spec = json.loads(path.read_text())
        for key, value in small.items():
            if key in spec and isinstance(spec[key], int):
                spec[key] = min(spec[key], value)
        cases[f"valid_{path.stem}"] = json.dumps(spec)
    cases.update({
        "valid_linear_4bit_options": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "target": "sm_75",
                                                 "opt_level": "O1", "fp_contract": "off"}),
        "valid_linear_4bit_o0": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "opt_level": "O0",
                                            "target": "sm_120"}),
        # The seed's parameter names are documented aliases of k and n.
        "valid_linear_4bit_seed_names": json.dumps({"op": "linear_4bit", "in_dim": 64, "out_dim": 8}),
        "invalid_empty": "",
        "invalid_not_json": "{\"op\": ",
        "invalid_array": "[1, 2]",
        # Found by spec_fuzzer: a number nlohmann cannot hold escaped as json::out_of_range.
        "invalid_number_overflow": "42949e7296",
        "invalid_dimension_1e999": "{\"op\": \"linear_4bit\", \"k\": 1e999, \"n\": 8}",
        "invalid_missing_op": "{\"k\": 8}",
        "invalid_op_not_string": "{\"op\": 7}",
        "invalid_unknown_op": "{\"op\": \"linear_5bit\"}",
        "invalid_unknown_key": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "inn_dim": 3}),
        "invalid_negative_dim": json.dumps({"op": "linear_4bit", "k": -64, "n": 8}),
        "invalid_float_dim": json.dumps({"op": "linear_4bit", "k": 64.5, "n": 8}),
        "invalid_u32_overflow": json.dumps({"op": "linear_4bit", "k": 1 << 32, "n": 8}),
        "invalid_zero_dim": json.dumps({"op": "linear_4bit", "k": 0, "n": 8}),
        "invalid_indivisible_dim": json.dumps({"op": "linear_4bit", "k": 7, "n": 8}),
        "invalid_huge_dims": json.dumps({"op": "linear_4bit", "k": 4294967288, "n": 4294967295}),
        "invalid_missing_param": json.dumps({"op": "linear_4bit", "k": 64}),
        "invalid_target": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "target": "sm_42"}),
        "invalid_target_type": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "target": 90}),
        "invalid_opt_level": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "opt_level": "O3"}),
        "invalid_fp_contract": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "fp_contract": "fast"}),
        "invalid_choice": json.dumps({"op": "dequant_matmul_fp8", "m": 1, "n": 4, "k": 8, "format": "e3m4"}),
        "invalid_bool_type": json.dumps({"op": "dequant_matmul_int4", "m": 1, "n": 4, "k": 8, "block_size": 4,
                                         "asymmetric": 1}),
        "invalid_activation": json.dumps({"op": "linear_4bit", "k": 64, "n": 8, "activation": "f8"}),
        "invalid_activation_on_packed_op": json.dumps({"op": "int4_dot_i32", "k": 64, "activation": "f16"}),
        "valid_int4_matvec_bf16_fast": json.dumps({"op": "int4_matvec_f32_scaled", "n": 4, "k": 64,
                                                   "schedule": "fast", "activation": "bf16"}),
    })
    return cases


# --- IR text ---------------------------------------------------------------------------

def ir_text_cases():
    cases = {}
    # Every program of the pass tests' case files (tests/passes/cases/*.qir), without
    # their CHECK lines: real programs the parser and the -O2 pipeline accept.
    for path in sorted((ROOT / "tests" / "passes" / "cases").glob("*.qir")):
        chunks = re.split(r"^// -----\s*$", path.read_text(), flags=re.M)
        for index, chunk in enumerate(chunks):
            lines = [line for line in chunk.splitlines() if not line.startswith("//")]
            text = "\n".join(lines).strip() + "\n"
            if text.strip():
                cases[f"valid_{path.stem}_{index}"] = text
    header = 'program "p" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\nbuffer @0 x: read_write f32[32]\n'
    cases.update({
        "valid_minimal": header + "{\n  x[invocation_id.x] = 1.0f32\n}\n",
        "valid_literals": header + "{\n  x[0u32] = f32(nan 0x7fc00001)\n  x[1u32] = f32(-inf)\n"
                                   "  x[2u32] = cast<f32>(1.5bf16)\n}\n",
        "invalid_empty": "",
        "invalid_no_body": header,
        "invalid_unclosed_block": header + "{\n  x[0u32] = 1.0f32\n",
        "invalid_undeclared_variable": header + "{\n  x[0u32] = y\n}\n",
        "invalid_type_mismatch": header + "{\n  x[0u32] = (1.0f32 + 1u32)\n}\n",
        "invalid_bad_literal": header + "{\n  x[0u32] = 1.0f33\n}\n",
        "invalid_store_type": header + "{\n  x[0u32] = 1u32\n}\n",
        "invalid_zero_workgroup": 'program "p" workgroup_size(0, 1, 1) workgroup_count(1, 1, 1)\n'
                                  'buffer @0 x: read_write f32[32]\n{\n}\n',
        "invalid_workgroup_too_large": 'program "p" workgroup_size(2048, 1, 1) workgroup_count(1, 1, 1)\n'
                                       'buffer @0 x: read_write f32[32]\n{\n}\n',
        # Once a SIGSEGV in quantc opt: nesting deeper than kMaxNestingDepth is a parse error.
        "invalid_nested_too_deep": header + "{\n  x[0u32] = " + "(" * 1200 + "1.0f32" + " + 1.0f32)" * 1200 + "\n}\n",
        "invalid_store_read_only": 'program "p" workgroup_size(32, 1, 1) workgroup_count(1, 1, 1)\n'
                                   'buffer @0 x: read_only f32[32]\n{\n  x[0u32] = 1.0f32\n}\n',
    })
    return cases


# --- kernel-cache entries --------------------------------------------------------------

def cache_entry(payload, **overrides):
    header = {"format": 1, "kind": "ptx", "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest(),
              "op": "fuzz", "target": "sm_80", "opt_level": "O2", "compiler_version": "0.1.0"}
    header.update(overrides)
    header = {k: v for k, v in header.items() if v is not None}
    return json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload


def cache_entry_cases():
    ptx = b"//\n.version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n  ret;\n}\n"
    return {
        "valid_ptx": cache_entry(ptx),
        "valid_empty_payload": cache_entry(b""),
        "valid_binary_payload": cache_entry(bytes(range(256))),
        "valid_payload_with_newlines": cache_entry(b"\n\n\n"),
        "valid_minimal_header": cache_entry(b"x", op=None, target=None, opt_level=None, compiler_version=None),
        # Fields `quantc cache ls` shows but load does not need: a wrong type is not an error.
        "valid_fields_of_wrong_type": cache_entry(b"x", op=[], target={}, opt_level=None, compiler_version=1.5),
        # The artifact kind is checked on load: absent or not a string, the entry is a miss.
        "invalid_kind_missing": cache_entry(b"x", kind=None),
        "invalid_kind_not_string": cache_entry(b"x", kind=7),
        "invalid_empty": b"",
        "invalid_no_newline": cache_entry(ptx).split(b"\n")[0],
        "invalid_header_not_json": b"{format: 1}\n" + ptx,
        "invalid_header_array": b"[1]\n" + ptx,
        "invalid_format_2": cache_entry(ptx, format=2),
        "invalid_format_missing": cache_entry(ptx, format=None),
        "invalid_format_string": cache_entry(ptx, format="1"),
        "invalid_format_fraction": cache_entry(ptx, format=1.5),
        "invalid_size_missing": cache_entry(ptx, size=None),
        "invalid_size_negative": cache_entry(ptx, size=-1),
        "invalid_size_string": cache_entry(ptx, size="10"),
        "invalid_truncated": cache_entry(ptx)[:-5],
        "invalid_trailing": cache_entry(ptx) + b"x",
        "invalid_sha_mismatch": cache_entry(ptx, sha256="0" * 64),
        "invalid_sha_not_string": cache_entry(ptx, sha256=5),
    }


# --- GGUF ------------------------------------------------------------------------------

GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL = range(8)
GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64 = range(8, 13)
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q4_1, GGML_Q8_0 = 0, 1, 2, 3, 8
GGML_Q4_K, GGML_Q5_K, GGML_Q6_K, GGML_BF16, GGML_Q5_0 = 12, 13, 14, 30, 6
# (block size, bytes per block) as in gguf-py's GGML_QUANT_SIZES
GGML_SIZES = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_BF16: (1, 2), GGML_Q4_0: (32, 18), GGML_Q4_1: (32, 20),
              GGML_Q8_0: (32, 34), GGML_Q4_K: (256, 144), GGML_Q5_K: (256, 176), GGML_Q6_K: (256, 210),
              GGML_Q5_0: (32, 22)}


def gguf_str(text):
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def gguf_kv(key, vtype, value):
    return gguf_str(key) + struct.pack("<I", vtype) + value


def gguf_file(kvs=(), tensors=(), data=b"", version=3, alignment=32, magic=b"GGUF", counts=None):
    """tensors: (name, ne, ggml type, offset); data follows the infos padded to `alignment`."""
    n_tensors, n_kv = counts if counts is not None else (len(tensors), len(kvs))
    out = magic + struct.pack("<IQQ", version, n_tensors, n_kv) + b"".join(kvs)
    for name, ne, ggml_type, offset in tensors:
        out += gguf_str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", ggml_type, offset)
    if tensors:
        out += bytes(-len(out) % alignment)
    return out + data


def gguf_tensor_bytes(ggml_type, count, seed):
    """`count` elements of `ggml_type`: deterministic bytes, f16 scales kept finite (1.0)."""
    block, size = GGML_SIZES[ggml_type]
    blocks = []
    for b in range(count // block):
        raw = bytearray(hashlib.sha256(f"{seed}.{b}".encode()).digest() * (size // 32 + 1))[:size]
        if ggml_type in (GGML_Q4_0, GGML_Q4_1, GGML_Q8_0, GGML_Q4_K, GGML_Q5_K, GGML_Q5_0):
            raw[0:2] = struct.pack("<H", 0x3C00)
        if ggml_type in (GGML_Q4_1, GGML_Q4_K, GGML_Q5_K):
            raw[2:4] = struct.pack("<H", 0x3800)
        if ggml_type == GGML_Q6_K:
            raw[208:210] = struct.pack("<H", 0x3C00)
        blocks.append(bytes(raw))
    return b"".join(blocks)


def gguf_cases():
    every_type = [
        gguf_kv("general.architecture", GGUF_STRING, gguf_str("llama")),
        gguf_kv("a.u8", GGUF_U8, b"\xff"), gguf_kv("a.i8", GGUF_I8, b"\x80"),
        gguf_kv("a.u16", GGUF_U16, struct.pack("<H", 65535)), gguf_kv("a.i16", GGUF_I16, struct.pack("<h", -2)),
        gguf_kv("a.u32", GGUF_U32, struct.pack("<I", 7)), gguf_kv("a.i32", GGUF_I32, struct.pack("<i", -7)),
        gguf_kv("a.f32", GGUF_F32, struct.pack("<f", 0.5)), gguf_kv("a.bool", GGUF_BOOL, b"\x01"),
        gguf_kv("a.u64", GGUF_U64, struct.pack("<Q", 1 << 63)), gguf_kv("a.i64", GGUF_I64, struct.pack("<q", -1)),
        gguf_kv("a.f64", GGUF_F64, struct.pack("<d", 1.5)),
        gguf_kv("a.tokens", GGUF_ARRAY, struct.pack("<IQ", GGUF_STRING, 2) + gguf_str("<s>") + gguf_str("\xe2\x96\x81a")),
        gguf_kv("a.nested", GGUF_ARRAY, struct.pack("<IQ", GGUF_ARRAY, 2) + struct.pack("<IQ", GGUF_I32, 1)
                + struct.pack("<i", 3) + struct.pack("<IQ", GGUF_BOOL, 0)),
    ]
    # One tensor of every dequantizable type, back to back, each padded to 32 bytes.
    tensors, data = [], b""
    for index, (name, ggml_type, ne) in enumerate([
            ("f32", GGML_F32, [3, 2]), ("f16", GGML_F16, [4]), ("bf16", GGML_BF16, [2, 2]), ("q4_0", GGML_Q4_0, [32, 2]),
            ("q4_1", GGML_Q4_1, [32]), ("q8_0", GGML_Q8_0, [64]), ("q4_k", GGML_Q4_K, [256]),
            ("q5_k", GGML_Q5_K, [256]), ("q6_k", GGML_Q6_K, [256, 1, 1, 1])]):
        count = 1
        for d in ne:
            count *= d
        tensors.append((name, ne, ggml_type, len(data)))
        data += gguf_tensor_bytes(ggml_type, count, index)
        data += bytes(-len(data) % 32)
    f32_tensor = [("w", [2, 2], GGML_F32, 0)]
    f32_data = struct.pack("<4f", 1, -2, 0.5, 8)
    align64 = [gguf_kv("general.alignment", GGUF_U32, struct.pack("<I", 64))]
    return {
        "valid_header_only": gguf_file(),
        "valid_version2": gguf_file([], f32_tensor, f32_data, version=2),
        "valid_metadata_every_type": gguf_file(every_type),
        "valid_every_dequantizable_type": gguf_file(every_type[:1], tensors, data),
        "valid_alignment_64": gguf_file(align64, [("w", [2, 2], GGML_F32, 64), ("v", [2], GGML_F32, 0)],
                                        struct.pack("<2f", 3, 4) + bytes(56) + f32_data, alignment=64),
        "valid_q5_0_not_dequantized": gguf_file([], [("q", [32], GGML_Q5_0, 0)], gguf_tensor_bytes(GGML_Q5_0, 32, 9)),
        "valid_zero_sized": gguf_file([], [("z", [0, 5], GGML_Q4_K, 0), ("w", [2, 2], GGML_F32, 0)], f32_data),
        "invalid_empty": b"",
        "invalid_bad_magic": gguf_file(magic=b"GGML"),
        "invalid_version1": gguf_file(version=1),
        "invalid_version4": gguf_file(version=4),
        "invalid_big_endian": b"GGUF" + struct.pack(">IQQ", 3, 0, 0),
        "invalid_truncated_header": gguf_file()[:20],
        "invalid_truncated_metadata": gguf_file(every_type)[:-3],
        "invalid_truncated_data": gguf_file([], f32_tensor, f32_data[:-1]),
        "invalid_kv_count_huge": gguf_file(counts=(0, 1 << 62)),
        "invalid_duplicate_key": gguf_file([every_type[1], every_type[1]]),
        "invalid_empty_key": gguf_file([gguf_kv("", GGUF_U8, b"\x00")]),
        "invalid_value_type": gguf_file([gguf_kv("k", 13, b"\x00")]),
        "invalid_bool": gguf_file([gguf_kv("k", GGUF_BOOL, b"\x02")]),
        "invalid_array_count_huge": gguf_file([gguf_kv("k", GGUF_ARRAY, struct.pack("<IQ", GGUF_U64, 1 << 60))]),
        "invalid_array_too_deep": gguf_file([gguf_kv("k", GGUF_ARRAY, struct.pack("<IQ", GGUF_ARRAY, 1) * 8
                                                                       + struct.pack("<IQ", GGUF_U8, 0))]),
        "invalid_alignment_not_power_of_two": gguf_file([gguf_kv("general.alignment", GGUF_U32, struct.pack("<I", 24))]),
        "invalid_alignment_type": gguf_file([gguf_kv("general.alignment", GGUF_U64, struct.pack("<Q", 32))]),
        "invalid_duplicate_tensor": gguf_file([], f32_tensor * 2, f32_data),
        "invalid_too_many_dims": gguf_file([], [("w", [1, 1, 1, 1, 1], GGML_F32, 0)], bytes(4)),
        "invalid_dims_overflow": gguf_file([], [("w", [1 << 32, 1 << 32], GGML_F32, 0)], bytes(4)),
        "invalid_unknown_type": gguf_file([], [("w", [4], 99, 0)], bytes(16)),
        "invalid_removed_type": gguf_file([], [("w", [32], 4, 0)], bytes(32)),
        "invalid_row_not_block_multiple": gguf_file([], [("w", [48], GGML_Q4_0, 0)], bytes(36)),
        "invalid_misaligned_offset": gguf_file([], [("w", [2, 2], GGML_F32, 16)], bytes(32)),
        "invalid_overlap": gguf_file([], [("a", [16], GGML_F32, 0), ("b", [4], GGML_F32, 32)], bytes(64)),
        "invalid_offset_past_end": gguf_file([], [("w", [2, 2], GGML_F32, 1 << 63)], f32_data),
    }


def main():
    write("safetensors", safetensors_cases())
    write("npy", npy_cases())
    write("spec", spec_cases())
    write("ir_text", ir_text_cases())
    write("cache_entry", cache_entry_cases())
    write("gguf", gguf_cases())


if __name__ == "__main__":
    main()
