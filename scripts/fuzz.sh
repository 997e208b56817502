#!/usr/bin/env bash
# Runs every fuzz target of the tree, one after the other, each for the
# same budget: scripts/fuzz.sh FUZZTIME [REGEXP].
#
# Targets are found, not listed: every `func FuzzXxx(f *testing.F)` in a
# _test.go file under the module (build tags of that file's //go:build
# line applied), so a new parser's target runs without editing anything.
# Each package's test binary is built once, with Go's fuzzing
# instrumentation, and runs each of its targets in turn from the package's
# folder, as `go test -fuzz` does (the same fuzz cache under GOCACHE, new
# failing inputs written to the package's testdata/fuzz/FuzzXxx/).
#
# FUZZTIME is a -fuzztime: a duration (10s, 10m) or a count (1000x).
# REGEXP, when given, keeps only the targets whose "package.FuzzXxx" name
# (package as a path relative to the module, e.g. validate.FuzzDecodeValidate)
# it matches. Every target runs even after one fails; the exit status is 1
# when any failed, and each failure says where its input was written and
# how to run it again.
set -uo pipefail
cd "$(dirname "$0")/.."

fuzztime=${1:?usage: scripts/fuzz.sh FUZZTIME [REGEXP]}
filter=${2:-}
GO=${GO:-go}
# FUZZMINIMIZETIME bounds the minimizing of each new interesting input
# (and of a failing one): Go's default is 60s.
minimize=${FUZZMINIMIZETIME:-60s}

# seconds prints a Go duration made of h, m, s parts (10s, 1m30s) in whole
# seconds; it fails on anything else.
seconds() {
	local d=$1 total=0 n unit
	[[ $d =~ ^([0-9]+(h|m|s))+$ ]] || return 1
	while [[ $d =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
		n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]} d=${BASH_REMATCH[3]}
		case $unit in
		h) total=$((total + 3600 * 10#$n)) ;;
		m) total=$((total + 60 * 10#$n)) ;;
		s) total=$((total + 10#$n)) ;;
		esac
	done
	echo "$total"
}

# A target that runs past its budget by this much has hung: a duration
# budget gets twice itself plus 5 minutes, a count 30 minutes.
if [[ $fuzztime =~ ^[0-9]+x$ ]]; then
	timeout=30m
elif secs=$(seconds "$fuzztime"); then
	timeout=$((2 * secs + 300))s
else
	echo "fuzz: FUZZTIME $fuzztime is not a duration or a count (10s, 1m30s, 1000x)" >&2
	exit 2
fi

# targets: lines "DIR TAGS TARGET FILE", sorted, one per target. TAGS is
# the comma-separated positive tags of the file's //go:build line, "-"
# when it has none.
list_targets() {
	git ls-files -co --exclude-standard -- '*_test.go' | while read -r file; do
		grep -q '^func Fuzz[A-Za-z0-9_]*([A-Za-z_][A-Za-z0-9_]* \*testing\.F)' "$file" || continue
		tags=$(sed -n 's|^//go:build ||p' "$file" | head -1 |
			grep -oE '!?[A-Za-z0-9_.]+' | grep -v '^!' | paste -sd, -)
		sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)([A-Za-z_][A-Za-z0-9_]* \*testing\.F).*/\1/p' "$file" |
			while read -r target; do
				echo "$(dirname "$file") ${tags:--} $target $file"
			done
	done | sort
}

targets=$(list_targets)
if [[ -n $filter ]]; then
	targets=$(awk -v re="$filter" '{ name = $1 "." $3; sub(/^\.\//, "", name); if (name ~ re) print }' <<<"$targets")
fi
if [[ -z $targets ]]; then
	echo "fuzz: no fuzz target${filter:+ matches $filter}" >&2
	exit 2
fi

cache=$("$GO" env GOCACHE)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
count=$(wc -l <<<"$targets")
echo "fuzz: $count targets, $fuzztime each"

failed=()
start=$SECONDS
current=""
while read -r dir tags target file; do
	key="$dir $tags"
	bin="$work/$(tr '/ ,' '___' <<<"$key").test"
	if [[ $key != "$current" ]]; then
		current=$key
		tagflag=()
		[[ $tags != - ]] && tagflag=(-tags "$tags")
		# -fuzz at build time turns on the fuzzing instrumentation; the
		# binary then runs any target of the package.
		# From the package's folder, so that a module of its own there
		# (cmd/hostlet-sops) builds as well as a package of this one.
		if ! (cd "$dir" && "$GO" test -c "${tagflag[@]}" -fuzz "^$target\$" -o "$bin" .) >"$work/build.log" 2>&1; then
			cat "$work/build.log"
			echo "fuzz: FAIL $dir: the test binary does not build"
			failed+=("$dir (build)")
			continue
		fi
		pkg=$(cd "$dir" && "$GO" list -f '{{.ImportPath}}' "${tagflag[@]}" .)
	fi
	[[ -x $bin ]] || continue
	# The list whole, then the match: grep -q would stop reading early,
	# and the binary's SIGPIPE fail the pipeline.
	listed=$(cd "$dir" && "$bin" -test.list '^Fuzz')
	if ! grep -qx "$target" <<<"$listed"; then
		echo "fuzz: FAIL $dir $target: found in $file but not in the package's test binary (tags ${tags})"
		failed+=("$dir $target (not built)")
		continue
	fi
	before=$(ls "$dir/testdata/fuzz/$target" 2>/dev/null)
	t0=$SECONDS
	(cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^$target\$" -test.fuzztime "$fuzztime" \
		-test.fuzzminimizetime "$minimize" -test.timeout "$timeout" -test.fuzzcachedir "$cache/fuzz/$pkg") >"$work/run.log" 2>&1
	rc=$?
	# What the budget did: inputs tried, or only so many seeds run (a
	# target with a large corpus may spend a short budget on them).
	done_=$(grep -oE 'execs: [0-9]+' "$work/run.log" | tail -1)
	: "${done_:=$(grep -oE 'baseline coverage: [0-9]+/[0-9]+' "$work/run.log" | tail -1 | sed 's/^/seeds only, /')}"
	if [[ $rc -eq 0 ]]; then
		echo "fuzz: ok   $dir $target ($((SECONDS - t0))s, ${done_:-no execs})"
		continue
	fi
	after=$(ls "$dir/testdata/fuzz/$target" 2>/dev/null)
	# Go 1.26's coordinator may end a run whose budget ran out with a
	# bare "context deadline exceeded" while a worker is still busy
	# (go.dev/issue/75804, fixed in Go 1.27): no input failed and none
	# was written. That, and only that, is a finished run.
	if [[ $before == "$after" ]] && ! grep -q 'fuzzing process\|panic\|Failing input' "$work/run.log" &&
		[[ $(grep -A1 -- "^--- FAIL: $target " "$work/run.log" | tail -1 | tr -d '[:space:]') == contextdeadlineexceeded ]]; then
		echo "fuzz: ok   $dir $target ($((SECONDS - t0))s, ${done_:-no execs}; ended by Go's deadline race at the budget's end, go.dev/issue/75804)"
		continue
	fi
	cat "$work/run.log"
	echo "fuzz: FAIL $dir $target ($((SECONDS - t0))s)"
	for f in $(comm -13 <(echo "$before") <(echo "$after")); do
		echo "fuzz:   failing input written to $dir/testdata/fuzz/$target/$f"
		echo "fuzz:   run it again: go test ${tagflag[*]} -run '^$target/$f\$' ./$dir"
		echo "fuzz:   commit it with the fix: it is a seed of $target from then on"
	done
	failed+=("$dir $target")
done <<<"$targets"

echo "fuzz: $count targets in $((SECONDS - start))s, ${#failed[@]} failed"
if ((${#failed[@]} > 0)); then
	printf 'fuzz: FAIL %s\n' "${failed[@]}"
	exit 1
fi
