#!/usr/bin/env bash
# Mutation testing of the storage layer and of the engine's persistence, on
# demand (not in CI: a run over checkpoint/ takes over an hour on 2 busy
# cores). See RELIABILITY.md, "Mutation testing".
#
#   .ci/mutation.sh              # both
#   .ci/mutation.sh checkpoint   # checkpoint/ and checkpoint/checkpointtest
#   .ci/mutation.sh iterate      # iterate/persist.go, journal.go, record.go
#
# Results go to $MUTATION_OUT (default: $TMPDIR/refine-mutation): <target>.log
# (one line per mutant) and <target>.json (gremlins' report).
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$(go env GOPATH)/bin:$PATH"
if ! command -v gremlins >/dev/null 2>&1; then
  go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
fi
# gremlins times each mutant's test run against its first coverage run
# (times 3); a coverage run answered from the test cache would make every
# mutant time out.
export GOFLAGS="$(go env GOFLAGS) -count=1"
out=${MUTATION_OUT:-${TMPDIR:-/tmp}/refine-mutation}
mkdir -p "$out"

checkpoint() {
  # pgcheckpoint is a module of its own, with a server to test against.
  gremlins unleash ./checkpoint -E 'pgcheckpoint' -o "$out/checkpoint.json" | tee "$out/checkpoint.log"
}

iterate() {
  # Only the persistence files are mutated: every other file of the
  # package, and its subpackages, are excluded (gremlins matches -E against
  # paths relative to the directory it is given).
  local keep='^(persist|journal|record)\.go$' args=(-E '/')
  for f in iterate/*.go; do
    b=$(basename "$f")
    case "$b" in *_test.go) continue ;; esac
    [[ $b =~ $keep ]] || args+=(-E "^${b//./\\.}\$")
  done
  # Each mutant runs the package's tests; the kill harnesses run 10 and 5
  # kills instead of 50 and 20 (set REFINE_KILLS, REFINE_CRASH_KILLS to
  # change it): the journal's mutations are also caught without kills.
  REFINE_KILLS=${REFINE_KILLS:-10} REFINE_CRASH_KILLS=${REFINE_CRASH_KILLS:-5} \
    gremlins unleash ./iterate "${args[@]}" -o "$out/iterate.json" | tee "$out/iterate.log"
}

case "${1:-all}" in
  checkpoint) checkpoint ;;
  iterate) iterate ;;
  all) checkpoint; iterate ;;
  *) echo "usage: $0 [checkpoint|iterate|all]" >&2; exit 2 ;;
esac
grep -h -E '^(Killed|Lived|Not covered|Timed out|Not viable|Mutator coverage|Test efficacy)' "$out"/*.log || true
