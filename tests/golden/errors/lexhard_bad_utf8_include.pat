// include: a path with an overlong sequence is quoted escaped where it is not found
include "À¯etc.pat";
