//! Exact top-k selection with a fixed tie rule: higher score first, then lower index.

use std::cmp::Ordering;

/// One scored candidate: `index` is a row position.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Similarity score.
    pub score: f32,
    /// Row position.
    pub index: usize,
}

/// The order used everywhere: descending score, ascending index on ties.
/// `-0.0` and `0.0` are equal scores (IEEE comparison); NaN never reaches here
/// because inputs are validated, and would sort by `total_cmp` if it did.
#[inline]
pub fn hit_order(a: &Hit, b: &Hit) -> Ordering {
    b.score
        .partial_cmp(&a.score)
        .unwrap_or_else(|| b.score.total_cmp(&a.score))
        .then(a.index.cmp(&b.index))
}

/// Bounded collector of the best `k` hits, kept sorted best-first.
///
/// Pushing in increasing index order needs only a strict `>` test against the
/// current worst, which is the fast path of every scan.
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    hits: Vec<Hit>,
}

impl TopK {
    /// An empty collector for `k` hits (`k >= 1`).
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            hits: Vec::with_capacity(k + 1),
        }
    }

    /// The score a new hit must beat to enter once full, or -inf.
    #[inline]
    pub fn threshold(&self) -> f32 {
        if self.hits.len() < self.k {
            f32::NEG_INFINITY
        } else {
            self.hits[self.k - 1].score
        }
    }

    /// Offer a hit. Hits must arrive in increasing index order within one collector
    /// (a tie with the current worst then loses, as the tie rule requires).
    #[inline]
    pub fn push(&mut self, score: f32, index: usize) {
        if self.hits.len() == self.k && score <= self.hits[self.k - 1].score {
            return;
        }
        self.insert(Hit { score, index });
    }

    fn insert(&mut self, h: Hit) {
        let pos = self
            .hits
            .partition_point(|x| hit_order(x, &h) != Ordering::Greater);
        self.hits.insert(pos, h);
        self.hits.truncate(self.k);
    }

    /// Merge another collector (any index order) into this one.
    pub fn merge(&mut self, other: TopK) {
        for h in other.hits {
            if self.hits.len() < self.k || hit_order(&h, &self.hits[self.k - 1]) == Ordering::Less {
                self.insert(h);
            }
        }
    }

    /// The hits, best first.
    pub fn into_sorted(self) -> Vec<Hit> {
        self.hits
    }
}

/// Exact top-k of a score slice, best first, ties to the lower index.
pub fn top_k(scores: &[f32], k: usize) -> Vec<Hit> {
    let mut t = TopK::new(k.max(1));
    t.extend_from(scores, 0);
    let mut v = t.into_sorted();
    v.truncate(k);
    v
}

impl TopK {
    /// Push `scores[i]` as index `first + i` for every `i`, skipping blocks of
    /// 16 whose maximum cannot enter (one vectorised max per block).
    pub fn extend_from(&mut self, scores: &[f32], first: usize) {
        const B: usize = 16;
        for (c, block) in scores.chunks(B).enumerate() {
            if self.hits.len() == self.k && block_max(block) <= self.threshold() {
                continue;
            }
            for (j, &s) in block.iter().enumerate() {
                self.push(s, first + c * B + j);
            }
        }
    }
}

/// Maximum of a short block (NaN-free input), in lanes so it vectorises.
#[inline]
fn block_max(v: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; 8];
    let mut it = v.chunks_exact(8);
    for c in &mut it {
        for l in 0..8 {
            m[l] = if c[l] > m[l] { c[l] } else { m[l] };
        }
    }
    for &x in it.remainder() {
        m[0] = if x > m[0] { x } else { m[0] };
    }
    m.iter().copied().fold(f32::NEG_INFINITY, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_go_to_lower_index() {
        let s = [0.5, 0.9, 0.5, 0.9, 0.1];
        let idx: Vec<usize> = top_k(&s, 3).iter().map(|h| h.index).collect();
        assert_eq!(idx, vec![1, 3, 0]);
    }

    #[test]
    fn merge_keeps_order() {
        let mut a = TopK::new(3);
        a.push(0.2, 5);
        a.push(0.7, 6);
        let mut b = TopK::new(3);
        b.push(0.7, 1);
        b.push(0.1, 2);
        b.push(0.9, 3);
        a.merge(b);
        let idx: Vec<usize> = a.into_sorted().iter().map(|h| h.index).collect();
        assert_eq!(idx, vec![3, 1, 6]);
    }

    #[test]
    fn matches_full_sort() {
        let s: Vec<f32> = (0..500).map(|i| ((i * 7919) % 101) as f32 / 10.0).collect();
        let mut all: Vec<Hit> = s
            .iter()
            .enumerate()
            .map(|(i, &x)| Hit { score: x, index: i })
            .collect();
        all.sort_by(hit_order);
        for k in [1, 5, 64, 500] {
            assert_eq!(top_k(&s, k), all[..k].to_vec());
        }
    }

    #[test]
    fn signed_zeros_tie() {
        let idx: Vec<usize> = top_k(&[-0.0, 0.0], 2).iter().map(|h| h.index).collect();
        assert_eq!(idx, vec![0, 1]);
    }

    #[test]
    fn infinities_are_ordered() {
        let s = [f32::NEG_INFINITY, 1.0, f32::INFINITY];
        let idx: Vec<usize> = top_k(&s, 3).iter().map(|h| h.index).collect();
        assert_eq!(idx, vec![2, 1, 0]);
    }
}
