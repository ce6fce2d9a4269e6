op b: spmm(M = 64, K = 64, N = 8) { perforate m keep 2; condense m on x; }
op c: spmm(M = 64, K = 64, N = 8) { condense k on x; }
op d: spmm(M = 64, K = 64, N = 8) { perforate k keep 2; condense k on w; }
