# A component on an axis that does not exist.
pir a m=8 k=8 {
  loop m 8 = n[8]*1
}
