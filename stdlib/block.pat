// block.pat - block-wise sparsity.
//
// block(bm, bk, density): W is tiled into bm x bk blocks and every block row
// (bm consecutive output rows) keeps the same number of whole blocks, chosen
// by importance.  Nest: M0 K0^c M1_bm K1_bk.
// Reproduces block-sparse weights as in Gray, Radford and Kingma, "GPU
// Kernels for Block-Sparse Weights" (OpenAI, 2017) and Narang et al.,
// "Block-Sparse Recurrent Neural Networks" (2017), with the balanced block
// count per block row that the Fractal paper uses (its Fig. 2, block-wise).
// `density` is a count of kept blocks per block row, or a percentage.
pattern block(bm, bk, density) {
    split m -> m0, m1 : _, bm pad;
    split k -> k0, k1 : _, bk pad;
    reorder m0, k0, m1, k1;
    perforate k0 keep density;
}
