pir fig8 m=1024 k=1024 {
  split m -> i0, i1, i2 : 4, 8, 32
  split k -> k0, k1, k2 : 32, 8, 4
  loop i0 4 = m[4]*256
  loop i1 8 keep 3 = m[8]*32
  loop k0 32 keep 28 = k[32]*32
  loop k1 8 keep 5 = k[8]*4
  loop k2 4 = k[4]*1
  loop i2 32 = m[32]*1
}
