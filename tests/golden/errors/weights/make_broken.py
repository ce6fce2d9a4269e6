#!/usr/bin/env python3
"""make_broken.py - (re)generates the broken weight files of the golden error
tests (tests/golden/errors/weightfile_*.pat) into this directory.

    python3 tests/golden/errors/weights/make_broken.py

Python 3 standard library only; the output is deterministic, so running it
again rewrites the same bytes.  Every file is small (8 x 8 tensors at most)
and broken in exactly one way, named by the file; the .pat that binds it says
what patc must report.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

M, K = 8, 8


def values(n):
    """n exact, finite, mixed-sign f32 values."""
    return [((i * 37) % 17 - 8) / 8.0 for i in range(n)]


def f32(vals):
    return struct.pack('<%df' % len(vals), *vals)


def f32_be(vals):
    return struct.pack('>%df' % len(vals), *vals)


def f64(vals):
    return struct.pack('<%dd' % len(vals), *vals)


def f16(vals):
    return struct.pack('<%de' % len(vals), *vals)


def bf16(vals):
    """bf16 by truncating f32 (the values used are exact in bf16)."""
    out = b''
    for v in vals:
        out += f32([v])[2:4]
    return out


def i64(vals):
    return struct.pack('<%dq' % len(vals), *vals)


def le64(n):
    return struct.pack('<Q', n)


def header_json(entries):
    """entries: a list of (name, value) pairs, so that a name may repeat."""
    return '{' + ', '.join(json.dumps(k) + ': ' + json.dumps(v) for k, v in entries) + '}'


def st_raw(header, data=b'', pad=True):
    """A safetensors image from header text (or bytes) and a data section."""
    h = header.encode() if isinstance(header, str) else header
    if pad:
        h += b' ' * (-len(h) % 8)
    return le64(len(h)) + h + data


def st(entries, data):
    return st_raw(header_json(entries), data)


def entry(dtype, shape, begin, end):
    return {'dtype': dtype, 'shape': shape, 'data_offsets': [begin, end]}


def npy_raw(header, data, major=1, magic=b'\x93NUMPY'):
    h = header
    # NumPy pads so that the data starts on a 64-byte boundary, ending in '\n'.
    start = len(magic) + 2 + (2 if major == 1 else 4)
    h += ' ' * (-(start + len(h) + 1) % 64) + '\n'
    hb = h.encode('latin-1')
    n = struct.pack('<H', len(hb)) if major == 1 else struct.pack('<I', len(hb))
    return magic + bytes([major, 0]) + n + hb + data


def npy(descr, shape, data, **kw):
    shp = '(' + ''.join('%d, ' % d for d in shape).rstrip(' ') + ')'
    if len(shape) != 1:
        shp = shp.replace(', )', ')')
    return npy_raw("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shp),
                   data, **kw)


W = values(M * K)           # the 8 x 8 weight, finite
W_BYTES = f32(W)            # 256 bytes


def with_at(vals, i, v):
    vals = list(vals)
    vals[i] = v
    return vals


NAN, INF = float('nan'), float('inf')


def cases():
    c = {}
    good = entry('F32', [M, K], 0, 256)

    # ---- safetensors: the container ----
    c['st_truncated.safetensors'] = le64(64)[:5]
    c['st_header_past_end.safetensors'] = le64(4096) + b'{"w": {}}'
    c['st_header_not_json.safetensors'] = st_raw(
        '{"w": {"dtype": "F32", shape: [8, 8], "data_offsets": [0, 256]}}', W_BYTES)
    c['st_header_not_object.safetensors'] = st_raw('[' + json.dumps(good) + ']', W_BYTES)
    c['st_header_trailing.safetensors'] = st_raw(
        header_json([('w', good)]) + ' {"v": 1}', W_BYTES)
    c['st_header_nul.safetensors'] = st_raw(
        header_json([('w', good)]).encode() + b'\x00', W_BYTES)
    # ---- safetensors: a header entry ----
    c['st_entry_not_object.safetensors'] = st([('w', ['F32', [8, 8], [0, 256]])], W_BYTES)
    c['st_no_dtype.safetensors'] = st(
        [('w', {'shape': [M, K], 'data_offsets': [0, 256]})], W_BYTES)
    c['st_no_shape.safetensors'] = st(
        [('w', {'dtype': 'F32', 'data_offsets': [0, 256]})], W_BYTES)
    c['st_no_offsets.safetensors'] = st([('w', {'dtype': 'F32', 'shape': [M, K]})], W_BYTES)
    c['st_unknown_dtype.safetensors'] = st([('w', entry('F7', [M, K], 0, 256))], W_BYTES)
    c['st_negative_shape.safetensors'] = st([('w', entry('F32', [-8, 8], 0, 256))], W_BYTES)
    c['st_fractional_shape.safetensors'] = st([('w', entry('F32', [8, 8.5], 0, 256))], W_BYTES)
    c['st_string_shape.safetensors'] = st([('w', entry('F32', ['8', 8], 0, 256))], W_BYTES)
    c['st_rank9.safetensors'] = st([('w', entry('F32', [1] * 7 + [M, K], 0, 256))], W_BYTES)
    c['st_offsets_past_end.safetensors'] = st([('w', entry('F32', [M, K], 0, 512))], W_BYTES)
    c['st_offsets_reversed.safetensors'] = st([('w', entry('F32', [M, K], 256, 0))], W_BYTES)
    c['st_offsets_one.safetensors'] = st(
        [('w', {'dtype': 'F32', 'shape': [M, K], 'data_offsets': [256]})], W_BYTES)
    c['st_overlap.safetensors'] = st(
        [('w', good), ('v', entry('F32', [4, 8], 128, 256))], W_BYTES)
    # an F32 header over F16-sized data
    c['st_size_mismatch.safetensors'] = st([('w', entry('F32', [M, K], 0, 128))], f16(W))
    c['st_duplicate_name.safetensors'] = st(
        [('w', good), ('w', entry('F32', [M, K], 256, 512))], W_BYTES + W_BYTES)
    # data the tensors do not cover: a gap before a tensor, bytes after the last
    c['st_data_gap.safetensors'] = st([('w', entry('F32', [M, K], 64, 320))], bytes(64) + W_BYTES)
    c['st_data_tail.safetensors'] = st([('w', good)], W_BYTES + bytes(16))
    c['st_metadata_not_string.safetensors'] = st(
        [('__metadata__', {'format': 'pt', 'step': 100}), ('w', good)], W_BYTES)
    c['st_metadata_not_object.safetensors'] = st(
        [('__metadata__', 'pt'), ('w', good)], W_BYTES)
    # ---- safetensors: the tensor asked for ----
    c['st_missing_tensor.safetensors'] = st(
        [('model.weight', good), ('model.bias', entry('F32', [M], 256, 288))],
        W_BYTES + f32(values(M)))
    c['st_int64.safetensors'] = st([('w', entry('I64', [M, K], 0, 512))],
                                   i64(list(range(M * K))))
    c['st_nan_f32.safetensors'] = st([('w', good)], f32(with_at(W, 3 * K + 4, NAN)))
    c['st_inf_f32.safetensors'] = st([('w', good)], f32(with_at(W, 1 * K + 6, INF)))
    c['st_inf_f16.safetensors'] = st([('w', entry('F16', [M, K], 0, 128))],
                                     f16(with_at(W, 7 * K + 0, -INF)))
    c['st_nan_f16.safetensors'] = st([('w', entry('F16', [M, K], 0, 128))],
                                     f16(with_at(W, 0 * K + 1, NAN)))
    c['st_inf_bf16.safetensors'] = st([('w', entry('BF16', [M, K], 0, 128))],
                                      bf16(with_at(W, 5 * K + 5, INF)))
    c['st_nan_bf16.safetensors'] = st([('w', entry('BF16', [M, K], 0, 128))],
                                      bf16(with_at(W, 6 * K + 2, NAN)))
    # finite in the file, but beyond the f32 range
    c['st_f64_overflow.safetensors'] = st([('w', entry('F64', [M, K], 0, 512))],
                                          f64(with_at(W, 2 * K + 3, 1e300)))
    c['st_empty.safetensors'] = st([('w', entry('F32', [0, K], 0, 0))], b'')
    c['st_rank3.safetensors'] = st([('w', entry('F32', [2, 8, 4], 0, 256))], W_BYTES)
    c['st_wrong_k.safetensors'] = st([('w', entry('F32', [8, 4], 0, 128))], f32(values(32)))
    # [K, M] = [16, 8] for an op with M = 8, K = 16
    c['st_transposed.safetensors'] = st([('w', entry('F32', [16, 8], 0, 512))],
                                        f32(values(128)))
    # ---- npy ----
    c['npy_bad_magic.npy'] = npy('<f4', [M, K], W_BYTES, magic=b'\x93NUMPX')
    c['npy_version9.npy'] = npy('<f4', [M, K], W_BYTES, major=9)
    c['npy_big_endian.npy'] = npy('>f4', [M, K], f32_be(W))
    c['npy_int64.npy'] = npy('<i8', [M, K], i64(list(range(M * K))))
    c['npy_float64.npy'] = npy('<f8', [M, K], f64(W))
    c['npy_truncated.npy'] = npy('<f4', [M, K], W_BYTES[:100])
    c['npy_trailing.npy'] = npy('<f4', [M, K], W_BYTES + b'\0\0\0\0')
    c['npy_no_shape.npy'] = npy_raw("{'descr': '<f4', 'fortran_order': False, }", W_BYTES)
    c['npy_header_past_end.npy'] = npy('<f4', [M, K], b'')[:40]
    c['npy_nan.npy'] = npy('<f4', [M, K], f32(with_at(W, 5 * K + 2, NAN)))
    c['npy_rank1.npy'] = npy('<f4', [M * K], W_BYTES)
    # ---- calibration and importance ----
    # [K, tokens] with K = 4, for a (layout kn) op with K = 8
    c['calib_wrong_k_kn.npy'] = npy('<f4', [4, 16], f32(values(64)))
    # [tokens, K] with K = 4, for a layout nk op with K = 8
    c['calib_wrong_k_nk.safetensors'] = st([('x', entry('F32', [16, 4], 0, 256))],
                                           f32(values(64)))
    c['calib_nan.safetensors'] = st([('x', entry('F32', [K, 4], 0, 128))],
                                    f32(with_at(values(32), 9, NAN)))
    scores = with_at([abs(v) for v in W], 2 * K + 5, -0.5)
    c['scores_negative.safetensors'] = st([('scores', good)], f32(scores))
    c['scores_wrong_shape.npy'] = npy('<f4', [M, 4], f32([abs(v) for v in values(32)]))
    return c


def main():
    for name, data in sorted(cases().items()):
        with open(os.path.join(HERE, name), 'wb') as f:
            f.write(data)
    print('make_broken.py: wrote %d files to %s' % (len(cases()), HERE))


if __name__ == '__main__':
    main()
