pir a m=8 k=8 {
  loop m 8 = m[8]*1
  loop k 8 keep 2 = k[8]*1
}

pir b m=8 k=8 {
  loop m 8 keep 2 = m[8]*1 condense on x
  loop k 8 = k[8]*1
}
