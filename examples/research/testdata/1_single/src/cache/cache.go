// Package cache keeps recently stored entries in memory and evicts the
// oldest entry when the cache is full.
package cache

// Cache is a bounded cache of entries; it evicts the oldest entry when it
// is full.
type Cache struct {
	entries map[string]*entry // the stored entries, by key
	order   []string          // keys, oldest first
	limit   int
}

// entry is one cache entry: a value stored under its key.
type entry struct {
	key   string
	value string
}

// New returns an empty cache that keeps at most limit entries and evicts
// the oldest entry beyond that.
func New(limit int) *Cache {
	return &Cache{entries: map[string]*entry{}, limit: limit}
}

// Put stores an entry in the cache, and evicts the oldest entry when the
// cache is full.
func (c *Cache) Put(key, value string) {
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = &entry{key: key, value: value}
	if len(c.order) > c.limit {
		c.evictOldest()
	}
}

// Get returns the value of the entry stored in the cache under key.
func (c *Cache) Get(key string) (string, bool) {
	e, ok := c.entries[key]
	if !ok {
		return "", false
	}
	return e.value, true
}

var shared = New(64)

func warm() {
	shared.Put("greeting", "hello")
	_, _ = shared.Get("greeting")
}
