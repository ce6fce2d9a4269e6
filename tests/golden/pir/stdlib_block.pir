pir b32 m=1000 k=700 {
  split m -> m0, m1 : 32, 32 pad 24
  split k -> k0, k1 : 22, 32 pad 4
  loop m0 32 = m[32]*32
  loop k0 22 keep 6 = k[22]*32
  loop m1 32 = m[32]*1
  loop k1 32 = k[32]*1
}

pir b8 m=100 k=60 {
  split m -> m0, m1 : 13, 8 pad 4
  split k -> k0, k1 : 8, 8 pad 4
  loop m0 13 = m[13]*8
  loop k0 8 keep 2 = k[8]*8
  loop m1 8 = m[8]*1
  loop k1 8 = k[8]*1
}
