pir a m=8 k=8 {
  loop m 8 = m[8]*1
  loop k 8 = k[8]*2
}
