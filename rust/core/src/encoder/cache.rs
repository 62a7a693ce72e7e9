//! LRU cache of embeddings with hit/miss counters.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lru::LruCache;
use parking_lot::Mutex;

/// Key: (text kind, text).
type Key = (u8, String);

/// Thread-safe LRU cache from (kind, text) to an embedding. Capacity 0 disables it.
pub struct EmbeddingCache {
    inner: Option<Mutex<LruCache<Key, Arc<[f32]>>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Counters of an [`EmbeddingCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that missed.
    pub misses: u64,
    /// Entries held now.
    pub size: usize,
    /// Maximum entries (0: disabled).
    pub capacity: usize,
}

impl EmbeddingCache {
    /// A cache holding at most `capacity` embeddings.
    pub fn new(capacity: usize) -> Self {
        EmbeddingCache {
            inner: NonZeroUsize::new(capacity).map(|c| Mutex::new(LruCache::new(c))),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Look up one text, counting a hit or a miss.
    pub fn get(&self, kind: u8, text: &str) -> Option<Arc<[f32]>> {
        let c = self.inner.as_ref()?;
        let v = c.lock().get(&(kind, text.to_owned())).cloned();
        let counter = if v.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        v
    }

    /// Every text's embedding when all are cached (counted as hits), else None (nothing counted).
    pub fn get_all(&self, kind: u8, texts: &[&str]) -> Option<Vec<Arc<[f32]>>> {
        let c = self.inner.as_ref()?;
        let mut g = c.lock();
        let out = texts
            .iter()
            .map(|t| g.get(&(kind, (*t).to_owned())).cloned())
            .collect::<Option<Vec<_>>>()?;
        drop(g);
        self.hits.fetch_add(out.len() as u64, Ordering::Relaxed);
        Some(out)
    }

    /// Store one embedding.
    pub fn put(&self, kind: u8, text: &str, v: Arc<[f32]>) {
        if let Some(c) = &self.inner {
            c.lock().put((kind, text.to_owned()), v);
        }
    }

    /// Drop every entry and reset the counters.
    pub fn clear(&self) {
        if let Some(c) = &self.inner {
            c.lock().clear();
        }
        self.hits.store(0, Ordering::Relaxed);
        self.misses.store(0, Ordering::Relaxed);
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let (size, capacity) = self.inner.as_ref().map_or((0, 0), |c| {
            let g = c.lock();
            (g.len(), g.cap().get())
        });
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            size,
            capacity,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_counts_and_evicts() {
        let c = EmbeddingCache::new(2);
        assert!(c.get(0, "a").is_none());
        c.put(0, "a", Arc::from(vec![1.0f32]));
        c.put(0, "b", Arc::from(vec![2.0f32]));
        assert_eq!(&*c.get(0, "a").unwrap(), &[1.0]);
        c.put(0, "c", Arc::from(vec![3.0f32]));
        assert!(c.get(0, "b").is_none());
        assert!(c.get(1, "a").is_none());
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.size, s.capacity), (1, 3, 2, 2));
        let off = EmbeddingCache::new(0);
        off.put(0, "a", Arc::from(vec![1.0f32]));
        assert!(off.get(0, "a").is_none());
    }
}
