#!/usr/bin/env bash
# run.sh - the golden-file runner.
#
#   tests/golden/run.sh PATC [--update]
#
# errors/NAME.pat   patc's diagnostics and exit code must equal NAME.err
# errors/NAME.pir   (the same for PatternIR text)
#                   (stderr, then a last line "exit: N").  A first line
#                   "// args: ..." gives extra command-line arguments.
# pir/NAME.pat      `patc NAME.pat --emit=pir` must equal NAME.pir, and the
#                   default output (paper notation) must equal NAME.txt.
# Every errors/*.pat is also run with --emit=weights -o FILE: it must fail
# and leave no FILE.
# pir/*.pir         print(parse(x)) == x: `patc X.pir --emit=pir` gives X.pir
#                   back byte for byte.
# --update rewrites the expected files from what patc prints now.
set -u
patc=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
update=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
export PATC_STDLIB=../../../stdlib
pass=0 fail=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

check() { # name expected-file actual-text
	if [ "$update" = --update ]; then
		printf '%s' "$3" > "$2"
		pass=$((pass + 1))
	elif [ -f "$2" ] && [ "$(cat "$2"; printf x)" = "$3x" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL: $1"
		if [ -f "$2" ]; then diff -u "$2" <(printf '%s' "$3") | head -30; else echo "  (no $2)"; fi
	fi
}

cd "$here/errors" || exit 1
for f in *.pat *.pir; do
	args=$(sed -n '1s|^// args: ||p' "$f")
	# shellcheck disable=SC2086
	out=$("$patc" "$f" $args --color=never 2>&1 >/dev/null)
	rc=$?
	check "errors/$f" "${f%.*}.err" "$out
exit: $rc
"
	# A failed run writes no output file, whatever it was asked to write.
	if [ "${f##*.}" = pat ] && [ "$update" != --update ]; then
		# shellcheck disable=SC2086
		"$patc" "$f" $args --emit=weights -o "$scratch/out.safetensors" >/dev/null 2>&1
		if [ $? -eq 0 ] || [ -e "$scratch/out.safetensors" ]; then
			fail=$((fail + 1))
			echo "FAIL: errors/$f with --emit=weights succeeded or left an output file"
			rm -f "$scratch/out.safetensors"
		else
			pass=$((pass + 1))
		fi
	fi
done

cd "$here/pir" || exit 1
for f in *.pat; do
	out=$("$patc" "$f" --emit=pir 2>/dev/null; echo "exit: $?")
	check "pir/$f --emit=pir" "${f%.pat}.pir" "$(printf '%s\n' "$out" | sed '$d')
"
	[ "$(printf '%s\n' "$out" | tail -1)" = "exit: 0" ] || { fail=$((fail + 1)); echo "FAIL: pir/$f exits non-zero"; }
	out=$("$patc" "$f" 2>&1)
	check "pir/$f (paper notation)" "${f%.pat}.txt" "$out
"
done
for f in *.pir; do
	out=$("$patc" "$f" --emit=pir 2>&1)
	if [ "$update" != --update ] && [ "$(cat "$f"; printf x)" != "$out
x" ]; then
		fail=$((fail + 1))
		echo "FAIL: print(parse($f)) differs"
		diff -u "$f" <(printf '%s\n' "$out") | head -20
	else
		pass=$((pass + 1))
	fi
done
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
