#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# unpack.sh - on the GPU machine: decompress what `make gpu-carry` packed
# into .gpu/ (with python3's lzma where xz is missing), then run run.sh.
#
#   tests/gpu/unpack.sh [run.sh arguments...]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in $(find "$root/.gpu" -name '*.xz'); do
	if command -v xz >/dev/null; then xz -d -f "$f"; else
		python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[1][:-3], "wb") as o: shutil.copyfileobj(i, o)' "$f"
		rm -f "$f"
	fi
done
chmod +x "$root/.gpu/patc" "$root/.gpu/gpu_bench"
exec "$root/tests/gpu/run.sh" "$root/.gpu" "$@"
