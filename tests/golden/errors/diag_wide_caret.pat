// diagnostics: the caret under the column it names past wide characters (two columns each) and a
// combining mark (none); a wide character's caret spans its two columns
op a: spmm(M = 8, K = 8, N = 8) { /* 行列の重み, é */ split q -> a, b : 2, 4; }
