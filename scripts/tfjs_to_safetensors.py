#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Convert a TF.js graph model (model.json + binary weight shards) to .safetensors.

Usage: tfjs_to_safetensors.py MODEL_JSON OUTPUT [--source NAME@VERSION] [--sha256 HEX]

Standard library only (json, struct, hashlib, base64, os, sys); no numpy.

- Reads model.json's weightsManifest: each group lists shard files (`paths`, relative to
  model.json) that are concatenated in order; the group's weights (name, shape, dtype) are laid out
  back to back in that byte stream.
- float32 tensors are kept under their exact TF.js names.  int32 tensors (graph constants such as
  reshape targets) are skipped with a message.  Any other dtype, or a quantized weight, is an error.
- Layout is decided from the graph (modelTopology.node: op, inputs, attrs), not from names or
  ranks.  Each weight's consumers are followed through pass-through ops (Identity, StopGradient,
  Snapshot, a Reshape that keeps the shape, a ConcatV2 of a single partition):
    * the second operand of a MatMul is stored [in, out] and is transposed to PyTorch's
      [out, in] (with transpose_b it already is [out, in] and is left alone);
    * a Conv2D filter of shape [1, 1, in, out] (a 1x1 convolution, i.e. a dense layer) is squeezed
      and transposed to a 2-D [out, in];
    * everything else (GatherV2 params such as embedding tables [vocab, dim], biases, layer-norm
      parameters, constants, scalars) is written exactly as stored.
  A weight whose role cannot be determined (no consumer, first operand of a MatMul, Conv2D filter
  larger than 1x1, a multi-partition concat, a Transpose, conflicting uses, ...) is written
  unchanged with a warning on stderr.  Transposition rewrites the data, not just the shape.  The
  rule is recorded in the safetensors `__metadata__` ("layout"), and the action taken for every
  tensor is printed.
- The output is written to a temporary file in the destination directory and renamed into place,
  so a failed or interrupted run never leaves a half-written OUTPUT.  With --sha256 the rename only
  happens when the file's SHA-256 matches.

The result is deterministic: tensors are ordered by name, the header is compact JSON.
Exit status: 0 on success, 1 on any error (message on stderr).
"""

import base64
import hashlib
import json
import os
import struct
import sys

LAYOUT_NOTE = "MatMul and 1x1 Conv2D weights as PyTorch [out, in]; other tensors as stored"
DTYPE_BYTES = {"float32": 4, "int32": 4}


class ConvertError(Exception):
    pass


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def check_shape(model_json, name, shape):
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ConvertError(
            "%s: tensor %r: bad shape %r in weightsManifest" % (model_json, name, shape)
        )


def transpose_2d(raw, rows, cols):
    """Row-major [rows, cols] 4-byte elements -> row-major [cols, rows], bit-exact."""
    n = rows * cols
    if n == 0:
        return raw
    vals = struct.unpack("<%dI" % n, raw)
    out = []
    for j in range(cols):
        out.extend(vals[j::cols])
    return struct.pack("<%dI" % n, *out)


def load_tfjs(model_json):
    """Return (model, entries): entries is a list of (name, shape, dtype, bytes) as stored."""
    try:
        with open(model_json, "rb") as f:
            model = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as e:
        raise ConvertError("cannot read %s: %s" % (model_json, e))
    manifest = model.get("weightsManifest") if isinstance(model, dict) else None
    if not isinstance(manifest, list) or not manifest:
        raise ConvertError("%s: no weightsManifest (not a TF.js model?)" % model_json)
    base = os.path.dirname(os.path.abspath(model_json))

    entries, seen = [], set()
    for gi, group in enumerate(manifest):
        paths = group.get("paths") if isinstance(group, dict) else None
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(paths, list) or not isinstance(weights, list):
            raise ConvertError(
                "%s: weightsManifest group %d lacks paths/weights" % (model_json, gi)
            )
        chunks = []
        for p in paths:
            if not isinstance(p, str):
                raise ConvertError("%s: group %d has a bad shard path %r" % (model_json, gi, p))
            fp = os.path.join(base, p)
            try:
                with open(fp, "rb") as f:
                    chunks.append(f.read())
            except OSError as e:
                raise ConvertError("cannot read weight shard %s: %s" % (fp, e))
        buf = b"".join(chunks)

        # First pass: validate every entry and the total size before converting anything.
        need = 0
        for w in weights:
            if not isinstance(w, dict):
                raise ConvertError("%s: group %d has a malformed weight entry" % (model_json, gi))
            name, shape, dtype = w.get("name"), w.get("shape"), w.get("dtype")
            if not isinstance(name, str) or not name:
                raise ConvertError("%s: group %d has a weight without a name" % (model_json, gi))
            check_shape(model_json, name, shape)
            if "quantization" in w:
                raise ConvertError(
                    "%s: tensor %r: quantized weights (%r) are not supported"
                    % (model_json, name, w["quantization"])
                )
            if dtype not in DTYPE_BYTES:
                raise ConvertError(
                    "%s: tensor %r: unsupported dtype %r (only float32, and int32 which is skipped)"
                    % (model_json, name, dtype)
                )
            need += numel(shape) * DTYPE_BYTES[dtype]
        if need != len(buf):
            raise ConvertError(
                "%s: group %d: weights need %d bytes but shards %s hold %d"
                % (model_json, gi, need, ", ".join(paths), len(buf))
            )

        off = 0
        for w in weights:
            name, shape, dtype = w["name"], list(w["shape"]), w["dtype"]
            size = numel(shape) * DTYPE_BYTES[dtype]
            raw = buf[off:off + size]
            off += size
            if name in seen:
                raise ConvertError(
                    "%s: tensor %r appears twice in weightsManifest" % (model_json, name)
                )
            seen.add(name)
            entries.append((name, shape, dtype, raw))
    return model, entries


# --- Layout from the graph -------------------------------------------------------------------

# Ops that hand their (first) input through unchanged in value and shape.
PASS_THROUGH = {"Identity", "StopGradient", "Snapshot", "PreventGradient"}
GATHER_OPS = {"Gather", "GatherV2", "ResourceGather"}
# Ops after which the stored layout no longer says what the consumer sees.
RESHUFFLE_OPS = {"Transpose", "ConjugateTranspose", "Reshape", "Concat", "ConcatV2", "Pack",
                 "Split", "SplitV", "Slice", "StridedSlice", "BatchMatMul", "BatchMatMulV2",
                 "BatchMatMulV3", "Einsum", "Conv2D", "DepthwiseConv2dNative", "MatMul"}
MAX_DEPTH = 16


def _node_ref(inp):
    """'^ctrl' -> None (control edge); 'name:k' -> ('name', k); 'name' -> ('name', 0)."""
    if not isinstance(inp, str) or not inp or inp.startswith("^"):
        return None
    name, sep, idx = inp.rpartition(":")
    if sep and idx.isdigit():
        return name, int(idx)
    return inp, 0


def _attr_bool(node, key):
    attrs = node.get("attr")
    v = attrs.get(key) if isinstance(attrs, dict) else None
    if isinstance(v, dict):
        v = v.get("b", False)
    return v is True or v == "true"


class Graph:
    def __init__(self, model_json, model, int_consts):
        topo = model.get("modelTopology")
        nodes = topo.get("node") if isinstance(topo, dict) else None
        if not isinstance(nodes, list) or not nodes:
            raise ConvertError(
                "%s: modelTopology has no graph nodes; only TF.js graph models are supported "
                "(the layout of each weight is derived from the ops that use it)" % model_json
            )
        self.nodes = {}
        self.inputs = {}
        self.consumers = {}
        for n in nodes:
            if not isinstance(n, dict) or not isinstance(n.get("name"), str):
                raise ConvertError("%s: malformed node in modelTopology" % model_json)
            self.nodes[n["name"]] = n
        for n in nodes:
            raw_inputs = n.get("input") or []
            if not isinstance(raw_inputs, list):
                raise ConvertError("%s: node %r has malformed inputs" % (model_json, n["name"]))
            data_inputs = [r for r in map(_node_ref, raw_inputs) if r]
            self.inputs[n["name"]] = data_inputs
            for k, (src, out_idx) in enumerate(data_inputs):
                if out_idx == 0:
                    self.consumers.setdefault(src, []).append((n, k))
        self.int_consts = int_consts

    def int_value(self, name):
        """Value of an int32 constant (from the manifest or an inline Const), or None."""
        if name in self.int_consts:
            return self.int_consts[name]
        try:
            return self._inline_int(self.nodes.get(name))
        except (AttributeError, TypeError, ValueError):
            return None

    @staticmethod
    def _inline_int(n):
        if not n or n.get("op") != "Const":
            return None
        t = n.get("attr", {}).get("value", {}).get("tensor", {})
        if t.get("dtype") not in (3, "DT_INT32"):
            return None
        dims = [int(d.get("size", 0)) for d in t.get("tensorShape", {}).get("dim", [])]
        count = numel(dims)
        if t.get("tensorContent"):
            raw = base64.b64decode(t["tensorContent"])
            if len(raw) != 4 * count:
                return None
            return list(struct.unpack("<%di" % count, raw))
        vals = [int(v) for v in t.get("intVal", [])]
        if len(vals) == count:
            return vals
        if len(vals) == 1:  # TF stores a splat as one value
            return vals * count
        return None

    def uses(self, name, shape, depth=0):
        """Roles of the tensor `name` (of shape `shape`) in the graph.

        Each role is (kind, text): kind is "matmul" (MatMul b, stored [in, out]), "matmul_t"
        (MatMul b with transpose_b), "conv1x1", "other" (layout irrelevant), or "unknown".
        """
        if depth > MAX_DEPTH:
            return [("unknown", "pass-through chain longer than %d" % MAX_DEPTH)]
        roles = []
        for node, k in self.consumers.get(name, []):
            op = node.get("op")
            desc = "%s %s" % (op, node["name"])
            n_in = len(self.inputs[node["name"]])
            if op in PASS_THROUGH and k == 0:
                roles += self.uses(node["name"], shape, depth + 1)
            elif op == "Reshape" and k == 0 and n_in == 2:
                target = self.int_value(self.inputs[node["name"]][1][0])
                if target is not None and _resolve_reshape(target, numel(shape)) == shape:
                    roles += self.uses(node["name"], shape, depth + 1)
                else:
                    roles.append(("unknown", "reshaped by %s" % desc))
            elif op == "ConcatV2" and n_in == 2 and k == 0:
                roles += self.uses(node["name"], shape, depth + 1)
            elif op == "MatMul" and k == 1 and len(shape) == 2:
                if _attr_bool(node, "transpose_b"):
                    roles.append(("matmul_t", "MatMul b, transpose_b: already [out, in]"))
                else:
                    roles.append(("matmul", "MatMul b"))
            elif op == "Conv2D" and k == 1:
                if len(shape) == 4 and shape[0] == 1 and shape[1] == 1:
                    roles.append(("conv1x1", "1x1 Conv2D filter"))
                else:
                    roles.append(("unknown", "Conv2D filter %s is not 1x1 (%s)" % (shape, desc)))
            elif op in GATHER_OPS and k == 0:
                roles.append(("other", "%s params (embedding)" % op))
            elif op in RESHUFFLE_OPS:
                roles.append(("unknown", "input %d of %s" % (k, desc)))
            else:
                roles.append(("other", "input %d of %s" % (k, op)))
        return roles


def _resolve_reshape(target, count):
    """A Reshape target (may hold one -1) as a concrete shape, or None."""
    if target.count(-1) > 1 or any(d < -1 for d in target):
        return None
    if -1 in target:
        known = numel([d for d in target if d != -1])
        if known == 0 or count % known:
            return None
        return [count // known if d == -1 else d for d in target]
    return list(target) if numel(target) == count else None


def plan(graph, name, shape):
    """Return (action, new_shape, why, warning) for one float32 tensor."""
    if name not in graph.nodes:
        return "unchanged", shape, "role unknown", "not a node of the graph"
    roles = graph.uses(name, shape)
    if not roles:
        return "unchanged", shape, "role unknown", "no consumer in the graph"
    unknown = [t for kind, t in roles if kind == "unknown"]
    if unknown:
        return "unchanged", shape, "role unknown", "; ".join(sorted(set(unknown)))
    kinds = set(kind for kind, _ in roles)
    texts = "; ".join(sorted(set(t for _, t in roles)))
    if len(kinds) > 1:
        return "unchanged", shape, "role ambiguous", "conflicting uses: " + texts
    kind = kinds.pop()
    if kind == "matmul":
        return "transposed", [shape[1], shape[0]], texts, None
    if kind == "conv1x1":
        return "squeezed+transposed", [shape[3], shape[2]], texts, None
    return "unchanged", shape, texts, None


def convert(model_json, model, entries):
    """Return (tensors, skipped, report): tensors is a sorted list of (name, shape, bytes)."""
    int_consts = {}
    for name, shape, dtype, raw in entries:
        if dtype == "int32":
            int_consts[name] = list(struct.unpack("<%di" % numel(shape), raw))
    graph = Graph(model_json, model, int_consts)
    tensors, skipped, report = [], [], []
    for name, shape, dtype, raw in entries:
        if dtype == "int32":
            skipped.append((name, shape, dtype))
            continue
        action, new_shape, why, warning = plan(graph, name, shape)
        if action == "transposed":
            raw = transpose_2d(raw, shape[0], shape[1])
        elif action == "squeezed+transposed":
            # [1, 1, in, out] is laid out exactly like [in, out].
            raw = transpose_2d(raw, shape[2], shape[3])
        tensors.append((name, new_shape, raw))
        report.append((name, shape, new_shape, action, why, warning))
    if not tensors:
        raise ConvertError("%s: no float32 tensors found" % model_json)
    tensors.sort(key=lambda t: t[0])
    report.sort(key=lambda r: r[0])
    return tensors, skipped, report


def build_header(tensors, metadata):
    header = {"__metadata__": metadata}
    off = 0
    for name, shape, raw in tensors:
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return text


def write_atomic(out_path, header, tensors, expect_sha256):
    out_path = os.path.abspath(out_path)
    tmp = os.path.join(
        os.path.dirname(out_path), ".%s.tmp.%d" % (os.path.basename(out_path), os.getpid())
    )
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as f:
            for piece in [struct.pack("<Q", len(header)), header] + [t[2] for t in tensors]:
                f.write(piece)
                h.update(piece)
            f.flush()
            os.fsync(f.fileno())
        digest = h.hexdigest()
        if expect_sha256 and digest != expect_sha256.lower():
            raise ConvertError(
                "SHA-256 mismatch for %s: got %s, expected %s (output not written)"
                % (out_path, digest, expect_sha256)
            )
        os.replace(tmp, out_path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ConvertError("cannot write %s: %s" % (out_path, e))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return digest


def main(argv):
    args, source, expect = [], None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--source", "--sha256"):
            if i + 1 >= len(argv):
                raise ConvertError("%s needs a value" % a)
            if a == "--source":
                source = argv[i + 1]
            else:
                expect = argv[i + 1]
            i += 2
        elif a in ("-h", "--help"):
            sys.stdout.write(__doc__)
            return 0
        else:
            args.append(a)
            i += 1
    if len(args) != 2:
        sys.stderr.write(
            "usage: tfjs_to_safetensors.py MODEL_JSON OUTPUT"
            " [--source NAME@VERSION] [--sha256 HEX]\n"
        )
        return 1
    model_json, out_path = args

    model, entries = load_tfjs(model_json)
    tensors, skipped, report = convert(model_json, model, entries)
    metadata = {"format": "pt", "layout": LAYOUT_NOTE}
    if source:
        metadata["source"] = source
    header = build_header(tensors, metadata)

    for name, shape, dtype in skipped:
        print("skipped (%s, not float32): %s %s" % (dtype, name, shape))
    params = 0
    counts = {}
    for name, old_shape, shape, action, why, warning in report:
        params += numel(shape)
        counts[action] = counts.get(action, 0) + 1
        if action == "unchanged":
            shapes = json.dumps(shape)
        else:
            shapes = "%s <- %s" % (json.dumps(shape), json.dumps(old_shape))
        print("%-19s %-24s %s  [%s]" % (action, shapes, name, why))
        if warning:
            sys.stderr.write(
                "tfjs_to_safetensors: warning: %s: %s; written unchanged %s\n"
                % (name, warning, json.dumps(shape))
            )
    digest = write_atomic(out_path, header, tensors, expect)
    size = 8 + len(header) + sum(len(t[2]) for t in tensors)
    print(
        "total: %d float32 tensors (%s), %d parameters, %d int32 tensors skipped; %s: %d bytes"
        % (
            len(tensors),
            ", ".join("%d %s" % (counts[a], a) for a in sorted(counts)),
            params, len(skipped), out_path, size,
        )
    )
    print("sha256: %s" % digest)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ConvertError as e:
        sys.stderr.write("tfjs_to_safetensors: error: %s\n" % e)
        sys.exit(1)
    except OSError as e:
        sys.stderr.write("tfjs_to_safetensors: error: %s\n" % e)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.stderr.write("tfjs_to_safetensors: interrupted\n")
        sys.exit(1)
