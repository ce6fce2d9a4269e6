// weights: a file that cannot be read says why (a path through a file: not a
// directory) for each setting that names one; "not found" only where nothing is there
op a: spmm(M = 64, K = 64, N = 8) {
    weights = npy("semahard_weights_not_a_directory.pat/w.npy");
    calibration = safetensors("semahard_weights_not_a_directory.pat/x.safetensors", "x");
    importance = safetensors("semahard_weights_not_a_directory.pat/s.safetensors", "s");
}
op b: spmm(M = 64, K = 64, N = 8) {
    weights = npy("semahard_no_such_weights.npy");
}
