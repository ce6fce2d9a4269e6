// weights file: an importance score tensor [8, 4] for an op with K = 8
op a: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1);
    importance = npy("weights/scores_wrong_shape.npy");
    perforate k keep 4;
}
