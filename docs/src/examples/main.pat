include "mine.pat";   // found in lib/ with -I lib
include "nm.pat";     // found in the standard library
include "nm.pat";     // already loaded: ignored
op a: spmm(M = 8, K = 8, N = 8) { apply mine(4); }
op b: spmm(M = 8, K = 8, N = 8) { apply nm(); }
