#!/usr/bin/env bash
# search.sh - `patc --search` end to end on small ops (shapes no tile
# divides): the reports (report.json, report.csv, tune.jsonl appended per
# measurement), the best kernel written, candidates whose measuring process
# crashes, hangs or returns a wrong C marked failed while the search goes
# on, --no-measure, --seed reproducibility, the op's search settings, the
# GPU targets' refusal to measure, a killed search resumed, shards (and
# Slurm's array variables) merged with `patc merge`, and the usage and
# environment errors.
#
#   tests/search.sh PATC
set -u
patc=$1
root=$(cd "$(dirname "$0")/.." && pwd)
export PATC_STDLIB=$root/stdlib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

cat >"$tmp/op.pat" <<'EOF'
op w: spmm(M = 96, K = 80, N = 40) { weights = random(3, rows); }
EOF

# 1. a measured search: exit 0, the reports agree with each other
"$patc" "$tmp/op.pat" --search --topk=3 --threads=2 --budget=20% -o "$tmp/a" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
	bad "search: exit $rc: $(tail -3 "$tmp/err")"
else
	python3 - "$tmp/a" <<'EOF' && ok || bad "search: the reports: see above"
import csv, json, sys
d = sys.argv[1]
r = json.load(open(d + "/report.json"))
c = r["candidates"]
meas = [x for x in c if x["status"] == "measured" and "reference" not in x]
assert r["op"] == "w" and r["M"] == 96 and r["K"] == 80 and r["N"] == 40, r
assert 1 <= len(meas) <= 3, len(meas)
assert all(x["relative_error"] < 1e-4 and x["latency_us"] > 0 and x["speedup"] > 0 for x in meas)
assert all(x["loss_over_bound"] <= 0.2 + 1e-12 for x in c if x["status"] != "rejected" and "reference" not in x)
assert all(x["loss_over_bound"] > 0.2 for x in c if x["status"] == "rejected")
assert all(x["within_budget"] == (x["loss_over_bound"] <= 0.2) for x in c)
assert all(abs(x["density"] - 0.25) <= 0.02 + 1e-12 for x in c if "reference" not in x), "density out of tolerance"
best = r["best"]
assert best["status"] == "measured" and best["latency_us"] == min(x["latency_us"] for x in meas)
allm = [x for x in c if x["status"] == "measured"]
dominated = lambda a: any(b is not a and b["magnitude_loss"] <= a["magnitude_loss"] and b["latency_us"] <= a["latency_us"]
                          and (b["magnitude_loss"] < a["magnitude_loss"] or b["latency_us"] < a["latency_us"]) for b in allm)
assert all(x["pareto"] == (not dominated(x)) for x in allm), "the Pareto set"
assert any(x["pareto"] for x in allm)
assert "pir" in best and best["pir"].startswith("pir w")
refs = [x for x in c if "reference" in x]
assert len(refs) >= 5 and all(x["status"] == "measured" for x in refs), [x.get("reference") for x in refs]
own = [x for x in c if "reference" not in x]
assert not any("reference" in x for x in own if x is best)
if "best_reference" in r:
    assert r["best_reference"]["within_budget"] and r["best_reference"]["reference"]
cm = r["cost_model"]
assert cm["measured"] == len(meas) and (len(meas) < 3 or -1 <= cm["spearman"] <= 1), cm
import xml.etree.ElementTree as E
svg = E.parse(d + "/pareto.svg").getroot()
assert svg.tag.endswith("svg") and len(list(svg)) > 10
rows = list(csv.DictReader(open(d + "/report.csv")))
assert len(rows) == len(c), (len(rows), len(c))
assert [x["pattern"] for x in rows] == [x["pattern"] for x in c]
log = [json.loads(l) for l in open(d + "/tune.jsonl")]
assert len(log) == len(meas) + len(refs), (len(log), len(meas), len(refs))
assert all(l["target"] == "x86-64" and "device" in l and "seed" in l and "patc" in l for l in log)
EOF
	for f in op.o op.h op.safetensors; do [ -s "$tmp/a/$f" ] || bad "search: no $f"; done
	grep -q "best: " "$tmp/out" && grep -q "over dense OpenBLAS" "$tmp/out" && ok || bad "search: summary: $(cat "$tmp/out")"
	# a second run appends to the log
	"$patc" "$tmp/op.pat" --search --topk=3 --threads=2 --budget=20% -o "$tmp/a" >/dev/null 2>&1
	n=$(python3 -c "import json,sys; print(sum(1 for x in json.load(open('$tmp/a/report.json'))['candidates'] if x['status']=='measured'))")
	[ "$(wc -l <"$tmp/a/tune.jsonl")" -eq $((2 * n)) ] && ok || bad "tune.jsonl not appended: $(wc -l <"$tmp/a/tune.jsonl") lines"
fi

# 2. a measuring process that crashes, hangs or returns a wrong C costs that
#    candidate only
for inj in crash hang wrong; do
	PATC_SEARCH_INJECT=$inj "$patc" "$tmp/op.pat" --search --topk=2 --threads=1 --budget=20% --timeout=8 \
		-o "$tmp/$inj" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	# a crash is a signal, or under a sanitizer (which catches SIGSEGV) a failing exit
	case $inj in crash) want="crashed (signal|exited with status" ;; hang) want="timed out after 8 s" ;; *) want="wrong result" ;; esac
	if [ $rc -eq 0 ] && python3 - "$tmp/$inj" "$want" <<'EOF'; then ok; else bad "$inj: exit $rc, $(tail -2 "$tmp/err")"; fi
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
failed = [x for x in r["candidates"] if x["status"] == "failed"]
assert len(failed) == 1 and any(w in failed[0]["why"] for w in sys.argv[2].split("|")), failed
assert r["best"]["status"] == "measured" and r["best"]["pattern"] != failed[0]["pattern"]
log = [json.loads(l) for l in open(sys.argv[1] + "/tune.jsonl")]
assert any("failed" in l for l in log)
EOF
done

# 3. --no-measure ranks by the cost model; --seed makes the order reproducible
for s in 1 2; do
	"$patc" "$tmp/op.pat" --search --no-measure --seed=7 -o "$tmp/nm$s" >"$tmp/out$s" 2>"$tmp/err" ||
		bad "--no-measure: exit $?: $(tail -2 "$tmp/err")"
done
python3 - "$tmp/nm1" "$tmp/nm2" <<'EOF' && ok || bad "--no-measure / --seed: see above"
import json, sys
a, b = (json.load(open(d + "/report.json")) for d in sys.argv[1:])
assert not any(x["status"] == "measured" for x in a["candidates"])
assert "predicted_us" in a["best"] and "latency_us" not in a["best"]
assert [x["pattern"] for x in a["candidates"]] == [x["pattern"] for x in b["candidates"]]
EOF
grep -q "predicted .* by the cost model (not measured)" "$tmp/out1" && ok || bad "--no-measure summary: $(cat "$tmp/out1")"

# the op's own settings, and the command line over them
cat >"$tmp/set.pat" <<'EOF2'
op w: spmm(M = 96, K = 80, N = 40) {
    weights = random(3, rows);
    search = search(sparsity = 50%, budget = 20%, topk = 2, max_depth = 2);
}
EOF2
"$patc" "$tmp/set.pat" --search --no-measure -o "$tmp/s1" >/dev/null 2>&1 &&
	"$patc" "$tmp/set.pat" --search --no-measure --sparsity=75% --topk=5 -o "$tmp/s2" >/dev/null 2>&1 &&
	python3 - "$tmp/s1" "$tmp/s2" <<'EOF2' && ok || bad "the op's search settings: see above"
import json, sys
a, b = (json.load(open(d + "/report.json"))["settings"] for d in sys.argv[1:])
assert (a["sparsity"], a["budget"], a["topk"], a["max_depth"]) == (0.5, 0.2, 2, 2), a
assert (b["sparsity"], b["budget"], b["topk"], b["max_depth"]) == (0.75, 0.2, 5, 2), b
EOF2

# the op's rank setting decides the masks the search scores (two-level
# perforations keep less under total ranking than under lookahead)
for rank in total lookahead; do
	sed "s/weights = random(3, rows);/weights = random(3, rows); rank = $rank;/" "$tmp/op.pat" >"$tmp/r_$rank.pat"
	"$patc" "$tmp/r_$rank.pat" --search --no-measure -o "$tmp/r_$rank" >/dev/null 2>&1 || bad "rank = $rank: exit $?"
done
python3 - "$tmp/r_total" "$tmp/r_lookahead" <<'EOF2' && ok || bad "the op's rank: see above"
import json, sys
t, l = ({x["pattern"]: x["magnitude_loss"] for x in json.load(open(d + "/report.json"))["candidates"]
         if x["pattern"].count("^") == 2 and "reference" not in x} for d in sys.argv[1:])
assert t.keys() == l.keys() and t
assert all(l[k] <= t[k] + 1e-12 for k in t) and any(l[k] < t[k] - 1e-9 for k in t), "rank ignored"
EOF2

# 4. GPU targets: no measuring there yet (exit 3); --no-measure ranks the
#    candidates the GPU rules allow
"$patc" "$tmp/op.pat" --search --target=sm_90 -o "$tmp/g" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] && grep -q "add --no-measure" "$tmp/err" && ok || bad "--target=sm_90: exit $rc, $(cat "$tmp/err")"
"$patc" "$tmp/op.pat" --search --target=sm_90 --no-measure --budget=20% -o "$tmp/g" >/dev/null 2>"$tmp/err" &&
	python3 -c "
import json; r = json.load(open('$tmp/g/report.json'))
assert r['target'] == 'sm_90' and r['best'] and not [x for x in r['candidates'] if x['status'] == 'measured']" &&
	ok || bad "--target=sm_90 --no-measure: $(tail -2 "$tmp/err")"

# 5. a search killed half-way and resumed measures nothing twice; two
#    shards (--shard and Slurm's variables) merged give one run's set
"$patc" "$tmp/op.pat" --search --topk=8 --threads=1 --budget=20% -o "$tmp/k" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 300); do
	[ -s "$tmp/k/tune.jsonl" ] && [ "$(wc -l <"$tmp/k/tune.jsonl")" -ge 2 ] && break
	sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
before=$(wc -l <"$tmp/k/tune.jsonl" 2>/dev/null || echo 0)
printf '{"time":"2026-' >>"$tmp/k/tune.jsonl" # a line cut short by the kill
"$patc" "$tmp/op.pat" --search --topk=8 --threads=1 --budget=20% --resume -o "$tmp/k" >"$tmp/out" 2>"$tmp/err"
rc=$?
python3 - "$tmp/k" "$before" <<'EOF2' && [ $rc -eq 0 ] && ok || bad "--resume after a kill: exit $rc; $(tail -3 "$tmp/out")"
import json, sys
d, before = sys.argv[1], int(sys.argv[2])
r = json.load(open(d + "/report.json"))
meas = [x for x in r["candidates"] if x["status"] in ("measured", "failed")]
own = [x for x in meas if "reference" not in x]
lines = [l for l in open(d + "/tune.jsonl").read().split("\n") if l.startswith("{") and l.endswith("}")]
pirs = [json.loads(l)["pir"] for l in lines]
assert before >= 2 and len(own) == 8, (before, len(own))
assert len(pirs) == len(set(pirs)), "a candidate measured twice"
assert set(pirs) == set(x["pir"] for x in meas), "a measured candidate missing from the log"
EOF2
grep -q "taken from the log" "$tmp/out" && ok || bad "--resume summary: $(cat "$tmp/out")"
"$patc" "$tmp/op.pat" --search --topk=6 --threads=1 --budget=20% --shard=0/2 -o "$tmp/sh0" >/dev/null 2>&1 &&
	SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 \
		"$patc" "$tmp/op.pat" --search --topk=6 --threads=1 --budget=20% -o "$tmp/sh1" >"$tmp/out1" 2>/dev/null &&
	grep -q "shard 2 of 2" "$tmp/out1" &&
	"$patc" merge "$tmp/sh0/tune.jsonl" "$tmp/sh1/tune.jsonl" "$tmp/sh1/tune.jsonl" -o "$tmp/merged.jsonl" >/dev/null &&
	mkdir -p "$tmp/m" && cp "$tmp/merged.jsonl" "$tmp/m/tune.jsonl" &&
	"$patc" "$tmp/op.pat" --search --topk=6 --threads=1 --budget=20% --resume -o "$tmp/m" >"$tmp/out2" 2>/dev/null &&
	"$patc" "$tmp/op.pat" --search --topk=6 --threads=1 --budget=20% -o "$tmp/one" >/dev/null 2>&1 &&
	python3 - "$tmp" <<'EOF2' && ok || bad "shards: $(cat "$tmp/out1" "$tmp/out2")"
import json, sys
t = sys.argv[1]
a, b, c, d = (json.load(open(t + x + "/report.json")) for x in ("/sh0", "/sh1", "/m", "/one"))
got = lambda r: sorted(x["pattern"] for x in r["candidates"] if x["status"] in ("measured", "failed") and "reference" not in x)
assert len(got(a)) == 3 and len(got(b)) == 3 and not set(got(a)) & set(got(b))
assert got(c) == got(d) and len(got(c)) == 6, (got(c), got(d))
measured = set(x["pir"] for x in d["candidates"] if x["status"] in ("measured", "failed"))
merged = [json.loads(l)["pir"] for l in open(t + "/merged.jsonl").read().splitlines()]
assert len(merged) == len(set(merged)) == len(measured), "merge kept a duplicate or lost an entry"
EOF2

# 6. errors
echo 'op w: spmm(M = 8, K = 8, N = 8) { }' >"$tmp/noweights.pat"
"$patc" "$tmp/noweights.pat" --search -o "$tmp/x" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "needs an op with weights" "$tmp/err" && ok || bad "no weights: exit $rc $(cat "$tmp/err")"
"$patc" "$tmp/op.pat" --search --sparsity=150% 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "sparsity takes a percentage" "$tmp/err" && ok || bad "--sparsity=150%: exit $rc"
"$patc" "$tmp/op.pat" --search --no-measure -o /proc/nonexistent/dir 2>"$tmp/err"
rc=$?
[ $rc -eq 3 ] && grep -q "cannot create" "$tmp/err" && ok || bad "unwritable -o: exit $rc $(cat "$tmp/err")"
"$patc" "$tmp/op.pat" --search --no-measure --sparsity=99.9% --tolerance=0.01% -o "$tmp/y" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q "no pattern" "$tmp/err" && ok || bad "unreachable sparsity: exit $rc $(cat "$tmp/err")"

echo "search: $pass passed, $fail failed"
[ $fail -eq 0 ]
