#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# spdx.sh - every source file names its license (SPDX-License-Identifier,
# LICENSE's MIT) in its first lines: C sources and headers, tables (.def),
# the grammar, scripts, build files.  Test data (tests/golden, fuzz seeds)
# and the .pat programs (their line numbers are in the goldens' messages)
# are not sources in this sense.
#
#   tests/spdx.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
fail=0 n=0
while IFS= read -r f; do
	case $f in
	tests/golden/* | tests/fuzz/seeds* | docs/* | data/* | bench/results/*) continue ;;
	*.c | *.h | *.def | *.cpp | *.l | *.y | *.py | *.sh | CMakeLists.txt | */CMakeLists.txt | Makefile | .ci/run) ;;
	*) continue ;;
	esac
	[ -f "$f" ] || continue
	n=$((n + 1))
	if ! head -3 "$f" | grep -q 'SPDX-License-Identifier: MIT'; then
		echo "FAIL: $f has no SPDX-License-Identifier line"
		fail=$((fail + 1))
	fi
done < <(git ls-files 2>/dev/null || find . -type f | sed 's|^\./||')
echo "spdx: $((n - fail)) of $n files name their license"
[ "$fail" -eq 0 ]
