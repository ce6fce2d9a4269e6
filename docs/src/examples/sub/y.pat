include "x.pat";
