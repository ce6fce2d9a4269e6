// helper of include_cycle.pat: includes cycle_b.pat
include "cycle_b.pat";
