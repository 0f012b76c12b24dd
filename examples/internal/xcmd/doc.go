// Package xcmd runs the external commands of the example programs safely:
// a command and every process it starts end together, and its output is
// captured within a bound.
//
// # Process groups
//
// [Prepare] puts a command in a process group of its own, so that a Ctrl+C
// at the terminal reaches only the program that runs it (which decides
// what to do), and so that the command and its children can be ended as
// one. Cancelling the command's context sends SIGTERM to the whole group;
// a group still alive grace later is killed (SIGKILL). [Wait] and [Run]
// kill whatever is left of the group as soon as the command itself exits,
// normally or not: children that outlived it cannot edit files afterwards,
// nor hold its output pipes open. On Linux the command also gets SIGKILL
// when the program that started it dies (a parent-death signal), so that a
// program killed outright does not leave it orphaned; its children are
// reached only through the group, by the program, which is then gone.
//
// Process groups are a Unix notion. Elsewhere [Prepare] only bounds the
// wait for the output, and cancellation kills the command alone.
//
// # Output
//
// [Tail] is an io.Writer that keeps the last bytes written to it, up to a
// bound, and counts the bytes it dropped, so that a caller can keep the end
// of a long output (where reports and errors are) and say that it was cut.
package xcmd
