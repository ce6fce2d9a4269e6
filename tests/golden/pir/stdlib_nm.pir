pir two_four m=96 k=576 {
  split k -> k0, k1 : 144, 4
  loop m 96 = m[96]*1
  loop k0 144 = k[144]*4
  loop k1 4 keep 2 = k[4]*1
}

pir one_eight m=64 k=100 {
  split k -> k0, k1 : 13, 8 pad 4
  loop m 64 = m[64]*1
  loop k0 13 = k[13]*8
  loop k1 8 keep 1 = k[8]*1
}
