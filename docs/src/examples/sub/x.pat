include "y.pat";
