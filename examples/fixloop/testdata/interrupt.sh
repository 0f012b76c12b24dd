#!/usr/bin/env bash
# A stand-in implementer that, on its first call, interrupts fixloop the way
# Ctrl-C at a terminal would: SIGINT to its whole process group (the test
# starts fixloop in a group of its own). Later calls copy the fix from
# $FIXLOOP_TEST_PATCHES/03.
set -u
if [ ! -e "$FIXLOOP_TEST_LOG/interrupted" ]; then
	touch "$FIXLOOP_TEST_LOG/interrupted"
	kill -INT 0
	exit 1
fi
cp "$FIXLOOP_TEST_PATCHES/03/claims.go" claims.go
