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
// nor hold its output pipes open.
//
// # Dying with the program
//
// A program killed outright (kill -9, the OOM killer) cannot end its
// commands; the kernel's parent-death signal (Linux) reaches only the
// process the program started, and sh -c, or an AI CLI, forks the
// processes that do the work. So [Start] (and Run) first starts a
// watchdog, a tiny sh that leads the group the command then joins: its
// standard input is a pipe that only the program can write to, and when
// the program ends, however it ends, the kernel closes the pipe, the
// watchdog reads the end of its input and kills the whole group (kill -9
// 0). The watchdog dies with the group when Wait kills it; on Linux it
// ignores the cancellation's SIGTERM and does not count among the
// processes the grace waits for. A process that leaves the group (setsid,
// setpgid) escapes it: no example command does.
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
