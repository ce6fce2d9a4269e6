// nm.pat - vector-wise N:M sparsity.
//
// nm(n, group): along every row, each group of `group` consecutive weights
// keeps its `n` most important ones.  Nest: M K0 K1_group^n.
// Reproduces the 2:4 pattern of NVIDIA Ampere sparse tensor cores (Mishra et
// al., "Accelerating Sparse Deep Neural Networks", 2021) and the general N:M
// sparsity of Zhou et al., "Learning N:M Fine-grained Structured Sparse
// Neural Networks From Scratch" (ICLR 2021).
pattern nm(n = 2, group = 4) {
    split k -> k0, k1 : _, group pad;
    perforate k1 keep n;
}
