// args: --target=sm_80
// target: stdlib tile_h perforates m inside a k loop, which sm_80 refuses
include "tile.pat";
op a: spmm(M = 64, K = 64, N = 8) {
    apply tile_h(16, 50%);
}
