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

/// A sort key with [`hit_order`]'s order: ascending keys are descending scores,
/// then ascending indices. The score's bits are mapped to an unsigned integer
/// that orders like the float (as `total_cmp` does), with `-0.0` first made
/// `0.0` so that signed zeros tie; integer compares are branch-free where
/// [`hit_order`]'s float compare and fallbacks are not (a cut of an int8
/// scan's 74-hit buffer spent most of its time in the comparator).
#[inline]
pub fn hit_key(h: &Hit) -> u128 {
    let b = (h.score + 0.0).to_bits();
    let ascending = if b >> 31 == 1 { !b } else { b | 0x8000_0000 };
    ((!ascending as u128) << 64) | h.index as u128
}

/// Bounded collector of the best `k` hits.
///
/// Hits at or above a floor are appended to a buffer; when the buffer holds
/// `cap` hits it is cut back to the best `k` (a linear-time selection) and the
/// floor rises to the k-th best score. A hit costs an append instead of a
/// binary-search insertion, whose branches mispredict on every entry (on a
/// Zen 5 EPYC an int8 scan of 10,000 rows spent 39 % of its time inserting into
/// a 37-hit pool, 2026-11-25). Ties are resolved by [`hit_order`] when the
/// buffer is cut, so hits may arrive in any index order.
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    cap: usize,
    floor: f32,
    hits: Vec<Hit>,
}

impl TopK {
    /// An empty collector for `k` hits (`k >= 1`).
    pub fn new(k: usize) -> Self {
        let cap = (2 * k).max(k + 32);
        TopK {
            k,
            cap,
            floor: f32::NEG_INFINITY,
            hits: Vec::with_capacity(cap),
        }
    }

    /// A score under which no hit can enter: the k-th best score at the last
    /// cut of the buffer (never above the current k-th best), or -inf.
    #[inline]
    pub fn threshold(&self) -> f32 {
        self.floor
    }

    /// Offer a hit (any index order).
    #[inline]
    pub fn push(&mut self, score: f32, index: usize) {
        if score >= self.floor {
            self.hits.push(Hit { score, index });
            if self.hits.len() >= self.cap {
                self.cut();
            }
        }
    }

    /// Keep the best `k` hits (unordered) and raise the floor to the k-th.
    fn cut(&mut self) {
        if self.hits.len() > self.k {
            let (_, kth, _) = self.hits.select_nth_unstable_by_key(self.k - 1, hit_key);
            self.floor = self.floor.max(kth.score);
            self.hits.truncate(self.k);
        }
    }

    /// Merge another collector into this one.
    pub fn merge(&mut self, other: TopK) {
        if other.k >= self.k {
            // Its floor is under its own k-th best, so under the merged one.
            self.floor = self.floor.max(other.floor);
        }
        for h in other.hits {
            self.push(h.score, h.index);
        }
    }

    /// The hits, best first.
    pub fn into_sorted(mut self) -> Vec<Hit> {
        self.cut();
        self.hits.sort_unstable_by_key(hit_key);
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
    /// Push `scores[i]` as index `first + i` for every `i`: each block of 16
    /// is compared with the floor at once (a bit mask, vectorised), and only
    /// the scores at or above it are offered, so the blocks a scan skips cost
    /// one compare and the others no branch per score.
    pub fn extend_from(&mut self, scores: &[f32], first: usize) {
        const B: usize = 16;
        for (c, block) in scores.chunks(B).enumerate() {
            let mut mask = at_or_above(block, self.floor);
            while mask != 0 {
                let j = mask.trailing_zeros() as usize;
                // The floor may have risen at a cut: push checks it again.
                self.push(block[j], first + c * B + j);
                mask &= mask - 1;
            }
        }
    }
}

/// Bit `j` set when `v[j] >= floor` (at most 16 scores; NaN-free input).
#[inline]
fn at_or_above(v: &[f32], floor: f32) -> u32 {
    if let Ok(a) = <&[f32; 16]>::try_from(v) {
        let mut m = 0u32;
        for (j, &x) in a.iter().enumerate() {
            m |= ((x >= floor) as u32) << j;
        }
        return m;
    }
    v.iter()
        .enumerate()
        .fold(0u32, |m, (j, &x)| m | (((x >= floor) as u32) << j))
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

    /// Every hit of `s`, sorted by [`hit_order`].
    fn sorted(s: &[f32]) -> Vec<Hit> {
        let mut all: Vec<Hit> = s
            .iter()
            .enumerate()
            .map(|(i, &x)| Hit { score: x, index: i })
            .collect();
        all.sort_by(hit_order);
        all
    }

    #[test]
    fn matches_full_sort() {
        let s: Vec<f32> = (0..500).map(|i| ((i * 7919) % 101) as f32 / 10.0).collect();
        let all = sorted(&s);
        for k in [1, 5, 64, 500] {
            assert_eq!(top_k(&s, k), all[..k].to_vec());
        }
    }

    #[test]
    fn any_push_order_and_merges_match_a_full_sort() {
        // Many ties, pushed out of index order, over several cuts and merges.
        let s: Vec<f32> = (0..2000).map(|i| ((i * 7919) % 37) as f32).collect();
        let all = sorted(&s);
        for k in [1, 3, 37, 100] {
            let mut parts: Vec<TopK> = (0..3).map(|_| TopK::new(k)).collect();
            for i in (0..s.len()).rev() {
                parts[i % 3].push(s[i], i);
            }
            let mut t = parts.pop().unwrap();
            for p in parts {
                t.merge(p);
            }
            assert!(t.threshold() <= all[k - 1].score);
            assert_eq!(t.into_sorted(), all[..k].to_vec(), "k={k}");
        }
    }

    #[test]
    fn signed_zeros_tie() {
        let idx: Vec<usize> = top_k(&[-0.0, 0.0], 2).iter().map(|h| h.index).collect();
        assert_eq!(idx, vec![0, 1]);
    }

    #[test]
    fn keys_order_as_hit_order() {
        let scores = [
            f32::NEG_INFINITY,
            -1.5,
            -0.0,
            0.0,
            1e-38,
            0.25,
            0.25,
            1.0,
            f32::MAX,
            f32::INFINITY,
            -1e-38,
        ];
        let hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .flat_map(|(i, &score)| {
                [
                    Hit { score, index: i },
                    Hit {
                        score,
                        index: usize::MAX - i,
                    },
                ]
            })
            .collect();
        for a in &hits {
            for b in &hits {
                assert_eq!(hit_key(a).cmp(&hit_key(b)), hit_order(a, b), "{a:?} {b:?}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn keys_order_as_hit_order_on_any_scores(a in proptest::num::f32::ANY, b in proptest::num::f32::ANY,
                                                 i in 0usize..4, j in 0usize..4) {
            proptest::prop_assume!(!a.is_nan() && !b.is_nan());
            let (x, y) = (Hit { score: a, index: i }, Hit { score: b, index: j });
            proptest::prop_assert_eq!(hit_key(&x).cmp(&hit_key(&y)), hit_order(&x, &y));
        }

        #[test]
        fn extend_from_matches_a_full_sort(s in proptest::collection::vec(-4i8..4, 0..200), k in 1usize..40) {
            // Few distinct values: many ties, blocks that pass the floor partly.
            let s: Vec<f32> = s.into_iter().map(|v| v as f32 / 2.0).collect();
            let mut want = sorted(&s);
            want.truncate(k);
            let mut t = TopK::new(k);
            t.extend_from(&s, 0);
            proptest::prop_assert_eq!(t.into_sorted(), want);
        }
    }

    #[test]
    fn infinities_are_ordered() {
        let s = [f32::NEG_INFINITY, 1.0, f32::INFINITY];
        let idx: Vec<usize> = top_k(&s, 3).iter().map(|h| h.index).collect();
        assert_eq!(idx, vec![2, 1, 0]);
    }
}
