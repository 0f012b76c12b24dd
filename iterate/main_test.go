package iterate_test

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Progress lines print the wall clock; tests read it in UTC.
	time.Local = time.UTC
	goleak.VerifyTestMain(m)
}
