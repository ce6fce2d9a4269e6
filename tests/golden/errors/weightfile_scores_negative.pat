// weights file: an importance score tensor holding a negative score (-0.5 at [2, 5])
op a: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1);
    importance = safetensors("weights/scores_negative.safetensors", "scores");
    perforate k keep 4;
}
