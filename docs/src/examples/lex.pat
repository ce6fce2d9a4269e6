// a line comment
/* a block
   comment */
op a_very_long_operator_name_that_is_too_long: spmm(M = 8, K = 8, N = 8);
op b: spmm(M = 8, K = 2.5, N = 8);
op c: spmm(M = 8, K = 8x, N = 8);
op d: spmm(M = 8, K = 8, N = 8) { weights = npy("a\qb.npy"); }
op e: spmm(M = 8, K = 1099511627777, N = 8) $
