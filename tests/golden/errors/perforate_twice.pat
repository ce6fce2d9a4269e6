// semantic: perforating a loop that is already perforated
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep 32;
    perforate k keep 16;
}
