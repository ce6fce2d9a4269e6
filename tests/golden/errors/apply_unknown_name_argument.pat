// A name passed to a pattern that no parameter of the caller holds: said at the
// argument that wrote it, with where the pattern used it.
include "nm.pat";
op o: spmm(M = 10, K = 8, N = 1) { apply nm(two, 4); }
