#!/usr/bin/env bash
# A stand-in implementer that hangs on its first call, the way an agent
# still at work does when the user presses Ctrl-C: it starts a grandchild
# that would edit claims.go three seconds later (its pid in
# $FIXLOOP_TEST_LOG/late.pid), creates $FIXLOOP_TEST_LOG/interrupted and
# waits. Later calls copy the fix from $FIXLOOP_TEST_PATCHES/03.
set -u
if [ ! -e "$FIXLOOP_TEST_LOG/interrupted" ]; then
	(sleep 3; echo '// late' >> claims.go) &
	echo $! > "$FIXLOOP_TEST_LOG/late.pid"
	echo started > "$FIXLOOP_TEST_LOG/interrupted"
	wait
	exit 1
fi
cp "$FIXLOOP_TEST_PATCHES/03/claims.go" claims.go
