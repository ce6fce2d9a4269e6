#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# device.sh - the one command for a lent device machine: unpack.sh (so
# run.sh) into a scratch folder, then what it wrote packed into
# DEST/gpu.tgz beside its output, DEST/run.log (the device tool brings back
# at most 8 files of $OUT, and run.sh writes more).  Packed also when the
# call's time limit stops it with SIGTERM; the log comes back in any case.
# The exit status is run.sh's.
#
#   tests/gpu/device.sh DEST        (RUN_SECONDS, STEPS, ... as run.sh takes them)
set -u
dest=${1:?usage: tests/gpu/device.sh DEST}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$dest"
work=$(mktemp -d)
pack() { tar -czf "$dest/gpu.tgz" -C "$work" . && echo "device.sh: $(ls "$work" | wc -l) files in $dest/gpu.tgz"; }
trap 'pack; rm -rf "$work"; exit 143' TERM INT
set -o pipefail
"$root/tests/gpu/unpack.sh" "$work" 2>&1 | tee "$dest/run.log"
rc=$?
pack
rm -rf "$work"
echo "device.sh: run.sh exited $rc"
exit $rc
