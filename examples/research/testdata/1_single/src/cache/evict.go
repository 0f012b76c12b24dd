package cache

// evictOldest evicts the oldest entry of the cache: the cache entry stored
// first is removed from the entries.
func (c *Cache) evictOldest() {
	if len(c.order) == 0 {
		return
	}
	oldest := c.order[0]
	c.order = c.order[1:]
	delete(c.entries, oldest)
}

// evictions counts the entries the cache evicted.
var evictions int

func countEviction() { evictions++ }
