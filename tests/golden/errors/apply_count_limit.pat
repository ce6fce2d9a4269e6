// Patterns that apply the one before twice: 2^30 applications, stopped at the limit.
pattern p0() { }
pattern p1() { apply p0(); apply p0(); }
pattern p2() { apply p1(); apply p1(); }
pattern p3() { apply p2(); apply p2(); }
pattern p4() { apply p3(); apply p3(); }
pattern p5() { apply p4(); apply p4(); }
pattern p6() { apply p5(); apply p5(); }
pattern p7() { apply p6(); apply p6(); }
pattern p8() { apply p7(); apply p7(); }
pattern p9() { apply p8(); apply p8(); }
pattern p10() { apply p9(); apply p9(); }
pattern p11() { apply p10(); apply p10(); }
pattern p12() { apply p11(); apply p11(); }
pattern p13() { apply p12(); apply p12(); }
pattern p14() { apply p13(); apply p13(); }
pattern p15() { apply p14(); apply p14(); }
pattern p16() { apply p15(); apply p15(); }
pattern p17() { apply p16(); apply p16(); }
pattern p18() { apply p17(); apply p17(); }
pattern p19() { apply p18(); apply p18(); }
pattern p20() { apply p19(); apply p19(); }
pattern p21() { apply p20(); apply p20(); }
pattern p22() { apply p21(); apply p21(); }
pattern p23() { apply p22(); apply p22(); }
pattern p24() { apply p23(); apply p23(); }
pattern p25() { apply p24(); apply p24(); }
pattern p26() { apply p25(); apply p25(); }
pattern p27() { apply p26(); apply p26(); }
pattern p28() { apply p27(); apply p27(); }
pattern p29() { apply p28(); apply p28(); }
pattern p30() { apply p29(); apply p29(); }
op o: spmm(M = 10, K = 6, N = 1) { apply p30(); }
