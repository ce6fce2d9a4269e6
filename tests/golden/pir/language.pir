pir a m=100 k=90 {
  split m -> m0, m1 : 7, 16 pad 12
  split k -> k0, k1 : 12, 8 pad 6
  loop m0 7 = m[7]*16
  loop k0 12 keep 6 = k[12]*8
  loop m1 16 = m[16]*1
  loop k1 8 keep 4 = k[8]*1 condense on x
}

pir b m=100 k=90 {
  split m -> m0, m1 : 5, 20
  split k -> k0, k1 : 9, 10
  loop m0 5 = m[5]*20
  loop k0 9 = k[9]*10
  loop m1 20 = m[20]*1
  loop k1 10 keep 8 = k[10]*1
}

pir dense m=5 k=5 {
  loop m 5 = m[5]*1
  loop k 5 = k[5]*1
}
