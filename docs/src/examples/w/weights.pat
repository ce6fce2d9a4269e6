// One 8 x 8 layer bound three ways and pruned to 2:4, and an op without weights.
include "nm.pat";

op a: spmm(M = 8, K = 8, N = 4) {
    weights = safetensors("layer.safetensors", "encoder.0.weight");
    apply nm(2, 4);
}

op b: spmm(M = 8, K = 8, N = 4) {
    weights = npy(file = "w.npy");      // the same values as a, in float32
    apply nm(2, 4);
}

op c: spmm(M = 8, K = 8, N = 4) {
    weights = random();                 // seed 0, kind plain
    apply nm(2, 4);
}

op d: spmm(M = 8, K = 8, N = 4);        // no weights: not pruned
