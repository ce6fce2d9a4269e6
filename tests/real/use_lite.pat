// Real weights: two layers of the Universal Sentence Encoder lite
// (make fetch-weights), pruned at 75% with two patterns.
include "all.pat";

op ffn1: spmm(M = 1536, K = 512, N = 128) {
    weights = safetensors("../../data/use-lite.safetensors",
        "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/Layer_1/TransformerLayer/FFN/conv1/Tensordot/Reshape_1");
    apply hybrid(32, 32, 50%);
}

op qkv: spmm(M = 1536, K = 512, N = 128, layout = nk) {
    weights = safetensors("../../data/use-lite.safetensors",
        "module/Encoder_en/KonaTransformer/Encode/Layer_1/TransformerLayer/MultiheadAttention/qkv_transform_single/kernel/part_0");
    calibration = random(seed = 1);
    importance = wanda;
    apply tile_h(32, 25%);
}
