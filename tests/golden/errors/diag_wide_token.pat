// diagnostics: a stray wide character's caret spans its two columns, and the marks after it count
// it as two
op b: spmm(M = 8, K = 8, N = 8) { split m -> 重, x : 2, 4; }
