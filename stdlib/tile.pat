// tile.pat - tile-wise sparsity, in both orientations.
//
// Tile-wise sparsity (Guo et al., "Accelerating Sparse DNN Models without
// Hardware-Support via Tile-Wise Sparsity", SC 2020) prunes whole columns or
// rows of W inside tiles, so each tile stays a dense, smaller GEMM.

// tile_v(rows, density): W is cut into tiles of `rows` output rows; inside a
// tile every kept reduction column is kept for all its rows (vertical
// vectors of height `rows`).  Nest: M0 K^c M1_rows.  Legal on GPUs.
pattern tile_v(rows, density) {
    split m -> m0, m1 : _, rows pad;
    reorder m0, k, m1;
    perforate k keep density;
}

// tile_h(cols, density): W is cut into tiles of `cols` reduction columns;
// inside a tile every kept output row is kept for all its columns
// (horizontal vectors of width `cols`).  Nest: K0 M^c K1_cols.  It perforates
// a spatial loop inside a reduction loop, which the GPU targets refuse (the
// paper's rule, to avoid atomics); x86-64 compiles it.
pattern tile_h(cols, density) {
    split k -> k0, k1 : _, cols pad;
    reorder k0, m, k1;
    perforate m keep density;
}
