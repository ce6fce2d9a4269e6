// elementwise.pat - fine-grained patterns.

// row_balanced(density): every output row keeps the same number of its most
// important weights.  Nest: M K^c.  Reproduces balanced sparsity (Yao et al.,
// "Balanced Sparsity for Efficient DNN Inference on GPU", AAAI 2019) at row
// granularity: element-wise freedom inside a row, balanced work across rows.
pattern row_balanced(density) {
    perforate k keep density;
}

// unstructured(density): element-wise pruning of the whole matrix, the
// accuracy upper bound (Han et al., "Learning both Weights and Connections
// for Efficient Neural Networks", NeurIPS 2015).  Nest: MK^c.  It joins m
// and k, which the GPU targets refuse; x86-64 compiles it.
pattern unstructured(density) {
    join m, k -> mk;
    perforate mk keep density;
}
