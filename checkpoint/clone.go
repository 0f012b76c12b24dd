package checkpoint

import (
	"reflect"

	"github.com/refine-go/refine/converge"
	"github.com/refine-go/refine/gap"
)

// copyCheckpoint makes dst a deep copy of src, reusing the storage dst
// already holds (its slices, maps and history) where it is large enough, so
// that a store recycling an evicted generation allocates next to nothing.
//
// With full false, it copies only what [Marshal] saves: the Notes and the
// History's Current assessment and Gaps (documented as unsaved) are dropped.
// dst must not share memory with anything still in use.
func copyCheckpoint(dst, src *Checkpoint, full bool) {
	state, engine, durations, gaps, notes, hist, journal := dst.State, dst.Engine, dst.Durations, dst.Gaps, dst.Notes, dst.History, dst.Journal
	*dst = *src
	dst.Journal = cloneJournal(journal, src.Journal)
	dst.State = cloneInto(state, src.State)
	dst.Engine = cloneInto(engine, src.Engine)
	dst.Durations = cloneInto(durations, src.Durations)
	dst.Gaps = cloneGaps(gaps, src.Gaps)
	if full {
		dst.Notes = cloneInto(notes, src.Notes)
	} else {
		dst.Notes = nil
	}
	if src.History == nil {
		dst.History = nil
		return
	}
	if hist == nil {
		hist = new(converge.History)
	}
	copyHistory(hist, src.History, full)
	dst.History = hist
}

// cloneJournal returns a deep copy of src, reusing buf and its parts.
func cloneJournal(buf, src []Entry) []Entry {
	if src == nil {
		return nil
	}
	old := buf[:cap(buf)]
	if cap(buf) < len(src) {
		buf = make([]Entry, len(src))
	} else {
		buf = buf[:len(src)]
	}
	for i := range src {
		var part []byte
		if i < len(old) {
			part = old[i].Part
		}
		buf[i] = src[i]
		buf[i].Part = cloneInto(part, src[i].Part)
	}
	return buf
}

// cloneInto returns a copy of src, in buf when it is large enough. It keeps
// the difference between nil and empty.
func cloneInto[T any](buf, src []T) []T {
	if src == nil {
		return nil
	}
	if cap(buf) < len(src) {
		buf = make([]T, len(src))
	} else {
		buf = buf[:len(src)]
	}
	copy(buf, src)
	return buf
}

// cloneGaps returns a deep copy of src, reusing buf and the Focus slices of
// its elements.
func cloneGaps(buf, src []gap.Gap) []gap.Gap {
	if src == nil {
		return nil
	}
	old := buf[:cap(buf)]
	if cap(buf) < len(src) {
		buf = make([]gap.Gap, len(src))
	} else {
		buf = buf[:len(src)]
	}
	for i := range src {
		var focus []string
		if i < len(old) {
			focus = old[i].Focus // read before buf[i] (which may be old[i]) is overwritten
		}
		buf[i] = src[i]
		buf[i].Focus = cloneInto(focus, src[i].Focus)
	}
	return buf
}

// copyHistory makes dst a deep copy of src, reusing dst's storage. With full
// false the unsaved Current and Gaps are dropped.
func copyHistory(dst, src *converge.History, full bool) {
	recent, work, gaps := dst.Recent, dst.WorkRemaining, dst.Gaps
	*dst = *src
	dst.Recent = cloneRecords(recent, src.Recent)
	dst.WorkRemaining = cloneInto(work, src.WorkRemaining)
	if !full {
		dst.Current = gap.Assessment{}
		dst.Gaps = nil
		return
	}
	dst.Gaps = cloneGaps(gaps, src.Gaps)
	if !reflect.ValueOf(&src.Current).Elem().IsZero() {
		deepCopy(reflect.ValueOf(&dst.Current).Elem(), reflect.ValueOf(&src.Current).Elem())
	}
}

// cloneRecords returns a deep copy of src, reusing buf and the Scores maps of
// its elements.
func cloneRecords(buf, src []converge.Record) []converge.Record {
	if src == nil {
		return nil
	}
	old := buf[:cap(buf)]
	if cap(buf) < len(src) {
		buf = make([]converge.Record, len(src))
	} else {
		buf = buf[:len(src)]
	}
	for i := range src {
		var scores map[string]float64
		if i < len(old) {
			scores = old[i].Scores
		}
		buf[i] = src[i]
		if src[i].Scores == nil {
			buf[i].Scores = nil
			continue
		}
		if scores == nil {
			scores = make(map[string]float64, len(src[i].Scores))
		} else {
			clear(scores)
		}
		for k, v := range src[i].Scores {
			scores[k] = v
		}
		buf[i].Scores = scores
	}
	return buf
}

// deepCopy sets dst, which must be settable and of src's type, to a deep copy
// of src: pointers, slices, maps and interfaces are followed and copied.
// Structs are first copied whole (unexported fields included, so unexported
// references stay shared) and then their exported fields are deep-copied.
// Used for the History's Current assessment, whose types belong to package
// gap and may grow; it does not handle cycles, which those types do not have.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Interface:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		deepCopy(v, src.Elem())
		dst.Set(v)
	case reflect.Slice:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Struct:
		dst.Set(src)
		t := src.Type()
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	default:
		dst.Set(src)
	}
}
