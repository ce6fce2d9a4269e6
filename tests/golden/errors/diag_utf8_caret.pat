// diagnostics: the caret under the column it names, past a comment of non-ASCII characters
// (one mark a character, not a byte)
op a: spmm(M = 8, K = 8, N = 8) { /* größe, état */ split q -> a, b : 2, 4; }
