// brief.pat - the README's language in brief.
include "all.pat";                       // the standard library, or any .pat file

pattern tiles(t, density = 25%) {        // a named, parameterised pattern
    split m -> m0, m1 : _, t pad;        // `_` is inferred; `pad` pads 1000 -> 1024
    split k -> k0, k1 : _, t pad;
    reorder m0, k0, m1, k1;              // a partial list takes the listed positions
    perforate k0 keep density;           // a count or a percentage
}

op q: spmm(M = 768, K = 768, N = 512, dtype = f16, layout = nk) {
    // from a checkpoint, weights = safetensors("bert.safetensors",
    //                                          "encoder.layer.0.attention.self.query.weight");
    weights = random(seed = 1, kind = heads);    // here seeded synthetic ones
    apply block(32, 32, 25%);            // positional or named arguments
    condense k0 on x;                    // gather the kept rows of X into a packed buffer
}

op fc: spmm(M = 1000, K = 512, N = 64) {
    apply tiles(t = 32);
}
