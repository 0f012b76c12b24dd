// Package sandbox builds the claims of a login token. It is the package
// fixloop's tests repair: as shipped, its tests fail.
package sandbox

import "strconv"

// Claims returns the claims of the login token of a user.
func Claims(userID int, name string) map[string]any {
	return map[string]any{"userId": strconv.Itoa(userID), "name": name}
}

// Greeting returns the greeting shown after a login.
func Greeting(name string) string {
	return "Hello, " + name + "!"
}
