// helper of include_cycle.pat: includes cycle_a.pat back, closing the cycle
include "cycle_a.pat";
