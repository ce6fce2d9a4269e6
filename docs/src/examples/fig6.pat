// The paper's Fig. 6: I0_4 J0_4^2 I1_4^2 J1_4 on a 16x16 weight.
// Values [4,2,2,4], J0 indices [4,2], I1 indices 16.
op fig6: spmm(M = 16, K = 16, N = 8) {
    split m -> i0, i1 : 4, 4;
    split k -> j0, j1 : 4, 4;
    reorder i0, j0, i1, j1;
    perforate j0 keep 2;
    perforate i1 keep 2;
}
