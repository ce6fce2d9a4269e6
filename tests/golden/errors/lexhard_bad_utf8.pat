// lexical: invalid UTF-8 is quoted escaped, never raw: overlong, surrogate, past U+10FFFF, truncated
op a: spmm(M = 64, K = 64, N = 8) { split À¯; }
op b: spmm(M = 64, K = 64, N = 8) { split í €; }
op c: spmm(M = 64, K = 64, N = 8) { split ô€€; }
op d: spmm(M = 64, K = 64, N = 8) { split â‚; }
