// Each binding compiles; what the files hold is checked when they are read.
op t: spmm(M = 8, K = 16, N = 4) {
    weights = npy("wide.npy");            // stored [in, out] = [16, 8]
}

op c: spmm(M = 8, K = 8, N = 16) {        // layout kn: activations [K, tokens]
    weights = npy("w.npy");
    calibration = npy("calib.npy");       // [16, 8]: [tokens, K]
}

op d: spmm(M = 8, K = 8, N = 4) {
    weights = npy("w64.npy");             // float64
}

op s: spmm(M = 8, K = 8, N = 4) {
    weights = npy("w.npy");
    importance = npy("w.npy");            // signed values as scores
}
