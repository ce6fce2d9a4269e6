#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install.sh - make install as a user meets it: installs the build into a
# temporary prefix (cmake --install --prefix), then, with PATC_STDLIB unset
# and from a directory outside the trees, checks the layout, the version
# (CHANGELOG.md's newest release), that the installed patc reads the
# installed standard library (a pattern only that copy has), builds the
# installed examples/c_api with cc and runs it, and reads the man page.
# Then the rest of the lookup order: $PATC_STDLIB above the installed
# library, the build tree's patc on the source tree's, and a copy of it
# outside the build tree on neither.
#
#   tests/install.sh BUILD_DIR
set -u
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset PATC_STDLIB
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
check() { if eval "$2"; then ok; else bad "$1"; fi; }

prefix=$tmp/prefix
if ! cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL: cmake --install"
	exit 1
fi
patc=$prefix/bin/patc
doc=$prefix/share/doc/patc
for f in bin/patc share/patc/stdlib/all.pat share/patc/stdlib/nm.pat share/patc/stdlib/cost-x86-64.model \
	share/man/man1/patc.1 share/doc/patc/LICENSE share/doc/patc/CHANGELOG.md share/doc/patc/README.md \
	share/doc/patc/examples/c_api/main.c share/doc/patc/examples/c_api/layer.pat; do
	check "installed: $f" "[ -s '$prefix/$f' ]"
done
check "patc is executable" "[ -x '$patc' ]"

want=$(sed -n 's/^## \[\([0-9][0-9.]*\)\].*/\1/p' "$root/CHANGELOG.md" | head -1)
got=$("$patc" --version | head -1)
check "--version is CHANGELOG.md's newest release ($want): $got" "[ '$got' = 'patc $want' ]"

# A pattern only the installed library has: nm under another name.
sed 's/^pattern nm(/pattern install_probe(/' "$prefix/share/patc/stdlib/nm.pat" \
	>"$prefix/share/patc/stdlib/install_probe.pat"
work=$tmp/work
mkdir "$work"
cat >"$work/probe.pat" <<'PAT'
include "install_probe.pat";

op probe: spmm(M = 16, K = 16, N = 8) {
    apply install_probe(2, 4);
}
PAT
cd "$work"
check "installed patc reads the installed library" "'$patc' probe.pat >'$tmp/out' 2>&1"
check "  and compiles the op" "grep -q probe '$tmp/out'"
check "\$PATC_STDLIB comes first" "! PATC_STDLIB='$tmp/none' '$patc' probe.pat >'$tmp/out' 2>&1"
check "  (the include not found)" "grep -q \"cannot find include file 'install_probe.pat'\" '$tmp/out'"

# The installed C example, built by its documented line with the installed patc.
cp -R "$doc/examples/c_api" "$work/c_api"
line=$(sed -n 's/^ \*   \(patc layer.pat .*\)$/\1/p' "$work/c_api/main.c")
check "main.c's build line found" "[ -n '$line' ]"
if (cd "$work/c_api" && PATH="$prefix/bin:$PATH" && eval "$line") >"$tmp/out" 2>&1; then
	ok
else
	bad "the installed example: $line"
	cat "$tmp/out"
fi
check "  wrote its object and header" "[ -s '$work/c_api/out/layer.o' ] && [ -s '$work/c_api/out/layer.h' ]"

# The man page: generated from --help, so it names every long option.
page=$prefix/share/man/man1/patc.1
if command -v man >/dev/null; then
	MANWIDTH=200 man -l "$page" >"$tmp/man" 2>/dev/null
else
	sed 's/\\-/-/g' "$page" >"$tmp/man"
fi
check "man page: its name line" "grep -q 'patc - a compiler for sparse weight patterns' '$tmp/man'"
missing=""
for opt in $("$patc" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
	grep -q -e "$opt" "$tmp/man" || missing="$missing $opt"
done
check "man page names every option of --help (missing:$missing)" "[ -z '$missing' ]"

# The build tree's patc reads the source tree's library from anywhere; a
# copy of it elsewhere does not (nor any library: nothing installed by it).
mkdir "$work/inc"
cat >"$work/inc/prog.pat" <<'PAT'
include "nm.pat";

op p: spmm(M = 16, K = 16, N = 8) {
    apply nm(2, 4);
}
PAT
check "build tree's patc reads the source tree's library" "'$build/patc' inc/prog.pat >'$tmp/out' 2>&1"
mkdir "$tmp/lone" && cp "$build/patc" "$tmp/lone/patc"
check "a copy outside the build tree does not" "! '$tmp/lone/patc' inc/prog.pat >'$tmp/out' 2>&1"
check "  (the include not found)" "grep -q \"cannot find include file 'nm.pat'\" '$tmp/out'"

echo "install: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
