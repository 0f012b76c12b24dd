#!/usr/bin/env bash
# A stand-in for an AI implementer, run by fixloop with sh -c in the working
# copy. It records the feedback it reads on stdin in
# $FIXLOOP_TEST_LOG/input-<iteration>.txt, then copies claims.go from
# $FIXLOOP_TEST_PATCHES/<iteration as 01, 02...>/ into the working copy.
set -eu
cat > "$FIXLOOP_TEST_LOG/input-$FIXLOOP_ITERATION.txt"
src="$FIXLOOP_TEST_PATCHES/$(printf '%02d' "$FIXLOOP_ITERATION")/claims.go"
if [ ! -f "$src" ]; then
	echo "no fix prepared for attempt $FIXLOOP_ITERATION" >&2
	exit 1
fi
cp "$src" claims.go
echo "implementer: rewrote claims.go (action $FIXLOOP_ACTION)"
