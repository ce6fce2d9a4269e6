// a failed weights setting is reported once, not again as missing weights
op a: spmm(M = 8, K = 8, N = 4) {
    weights = random(seed = 1, kind = stripes);
    calibration = random(seed = 2);
    perforate k keep 4;
}
