package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/refine-go/refine/checkpoint"
)

func ExampleDir() {
	dir, err := os.MkdirTemp("", "refine-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store := checkpoint.NewDir(dir, checkpoint.Keep(2))
	for i := 1; i <= 3; i++ {
		c := &checkpoint.Checkpoint{
			Session:    "build",
			Generation: uint64(i),
			Iteration:  i,
			Status:     "running",
			State:      fmt.Appendf(nil, `{"done":%d}`, i),
		}
		if err := store.Save(ctx, c); err != nil {
			log.Fatal(err)
		}
	}

	c, err := store.Load(ctx, "build")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("iteration %d, status %s, state %s\n", c.Iteration, c.Status, c.State)

	files, _ := filepath.Glob(filepath.Join(dir, "build.*"))
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}

	_, err = store.Load(ctx, "deploy")
	fmt.Println(errors.Is(err, checkpoint.ErrNotFound))
	// Output:
	// iteration 3, status running, state {"done":3}
	// build.00000000000000000002.ckpt
	// build.00000000000000000003.ckpt
	// build.session
	// true
}

// A damaged newest generation is set aside and the previous one loaded; the
// generations skipped are reported, for the host to tell its user.
func ExampleDir_Load() {
	dir, err := os.MkdirTemp("", "refine-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store := checkpoint.NewDir(dir)
	for i := 1; i <= 2; i++ {
		c := &checkpoint.Checkpoint{Session: "build", Generation: uint64(i), Iteration: i, Status: "interrupted"}
		if err := store.Save(ctx, c); err != nil {
			log.Fatal(err)
		}
	}
	// Simulate damage to generation 2.
	newest := filepath.Join(dir, "build.00000000000000000002.ckpt")
	if err := os.WriteFile(newest, []byte("garbage"), 0o600); err != nil {
		log.Fatal(err)
	}

	c, err := store.Load(ctx, "build")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resuming generation", c.Generation, "after iteration", c.Iteration)
	fmt.Println("skipped damaged generations", c.Skipped)
	files, _ := filepath.Glob(filepath.Join(dir, "build.*"))
	for _, f := range files {
		fmt.Println(filepath.Base(f))
	}
	// Output:
	// resuming generation 1 after iteration 1
	// skipped damaged generations [2]
	// build.00000000000000000001.ckpt
	// build.00000000000000000002.ckpt.corrupt
	// build.session
}

// A run locks its session and saves with the lock's fencing token. Once
// another run holds the session, the first run's saves are refused.
func ExampleDir_Lock() {
	dir, err := os.MkdirTemp("", "refine-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store := checkpoint.NewDir(dir)
	token, release, err := store.Lock(ctx, "build")
	if err != nil {
		log.Fatal(err)
	}
	err = store.Save(ctx, &checkpoint.Checkpoint{Session: "build", Token: token, Status: "running"})
	fmt.Println("token", token, "save:", err)

	// A second run of the same session is refused.
	_, _, err = checkpoint.NewDir(dir).Lock(ctx, "build")
	var locked *checkpoint.LockedError
	fmt.Println(errors.As(err, &locked), locked.Session)

	// Once the lock is released and taken by another run, the first run is
	// fenced.
	release()
	token2, release2, err := checkpoint.NewDir(dir).Lock(ctx, "build")
	if err != nil {
		log.Fatal(err)
	}
	defer release2()
	err = store.Save(ctx, &checkpoint.Checkpoint{Session: "build", Token: token, Status: "running"})
	var fenced *checkpoint.FencedError
	fmt.Println("token", token2, errors.As(err, &fenced), fenced.Token, fenced.Current)
	// Output:
	// token 1 save: <nil>
	// true build
	// token 2 true 1 2
}

func ExampleMemory() {
	var store checkpoint.Memory // the zero value is ready to use
	ctx := context.Background()
	c := &checkpoint.Checkpoint{Session: "fix-loop", Generation: 1, Iteration: 2, Status: "escalated", Question: "Retry with a larger budget?"}
	if err := store.Save(ctx, c); err != nil {
		log.Fatal(err)
	}
	c.Status = "changed after saving" // the store kept a copy

	got, err := store.Load(ctx, "fix-loop")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Iteration, got.Status, got.Question)
	// Output:
	// 2 escalated Retry with a larger budget?
}

func ExampleMarshal() {
	data, err := checkpoint.Marshal(&checkpoint.Checkpoint{Session: "research", Iteration: 2, Engine: []byte("resume"), State: []byte("notes")})
	if err != nil {
		log.Fatal(err)
	}
	c, err := checkpoint.Unmarshal(data)
	fmt.Println(c.Session, c.Iteration, string(c.Engine), string(c.State), err)

	data[len(data)/2] ^= 1 // one flipped bit
	_, err = checkpoint.Unmarshal(data)
	fmt.Println(errors.Is(err, checkpoint.ErrCorrupt), err)
	// Output:
	// research 2 resume notes <nil>
	// true checkpoint: corrupt: checksum mismatch
}

// KeepBest keeps, beside the newest generations, the one the newest names
// as holding the loop's best state; Generations lists what is kept and
// LoadGeneration loads any of it. MaxBytes bounds the rest.
func ExampleKeepBest() {
	dir, err := os.MkdirTemp("", "refine-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	store := checkpoint.NewDir(dir, checkpoint.Keep(2), checkpoint.KeepBest(), checkpoint.MaxBytes(1<<20))
	for i := 1; i <= 6; i++ {
		c := &checkpoint.Checkpoint{
			Session:    "essay",
			Generation: uint64(i),
			Iteration:  i,
			Status:     "running",
			State:      fmt.Appendf(nil, `{"draft":%d}`, i),
		}
		if i >= 4 {
			c.BestGeneration = 3 // the engine found generation 3's state the best
		}
		if err := store.Save(ctx, c); err != nil {
			log.Fatal(err)
		}
	}
	gens, err := store.Generations(ctx, "essay")
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range gens {
		fmt.Printf("generation %d (best: %d)\n", g.Generation, g.BestGeneration)
	}
	best, err := store.LoadGeneration(ctx, "essay", gens[len(gens)-1].BestGeneration)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("best state: %s\n", best.State)
	// Output:
	// generation 3 (best: 0)
	// generation 5 (best: 3)
	// generation 6 (best: 3)
	// best state: {"draft":3}
}
