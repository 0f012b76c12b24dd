// Package term tells the example programs whether they talk to a terminal.
package term

import "os"

// Is reports whether v (an io.Reader or io.Writer) is an *os.File on a
// terminal: a character device other than the null device, which is one
// too but never has a person behind it.
func Is(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
