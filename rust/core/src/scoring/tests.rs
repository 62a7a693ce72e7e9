use super::*;

#[test]
fn aggregation_variants() {
    let s = [0.9, 0.1, 0.5, 0.7, 0.3];
    let r = [0, 0, 1, 1, 1];
    assert_eq!(
        aggregate(&s, &r, 3, Aggregation::Max).unwrap()[..2],
        [0.9, 0.7]
    );
    let m = aggregate(&s, &r, 2, Aggregation::Mean).unwrap();
    assert!((m[0] - 0.5).abs() < 1e-6 && (m[1] - 0.5).abs() < 1e-6);
    let t = aggregate(&s, &r, 3, Aggregation::TopNMean(2)).unwrap();
    assert!((t[1] - 0.6).abs() < 1e-6);
    assert_eq!(t[2], f32::NEG_INFINITY);
    assert!(aggregate(&s, &[0, 0, 5, 0, 0], 2, Aggregation::Max).is_err());
}

#[test]
fn softmax_is_stable() {
    let p = softmax(&[1000.0, 1000.0, f32::NEG_INFINITY], 1.0).unwrap();
    assert_eq!(p, vec![0.5, 0.5, 0.0]);
    let u = softmax(&[f32::NEG_INFINITY; 4], 0.1).unwrap();
    assert_eq!(u, vec![0.25; 4]);
    let q = softmax(&[0.1, 0.2], 0.01).unwrap();
    assert!((q.iter().sum::<f32>() - 1.0).abs() < 1e-6 && q[1] > q[0]);
    assert!(softmax(&[1.0], 0.0).is_err());
    assert!(softmax(&[f32::NAN], 1.0).is_err());
}

#[test]
fn affinity_boosts_and_penalises() {
    let mut s = vec![0.5, 0.5];
    apply_affinity(
        &mut s,
        &[0, 1],
        &[true, false],
        DEFAULT_BOOST,
        DEFAULT_PENALTY,
    )
    .unwrap();
    assert!((s[0] - 0.575).abs() < 1e-6 && (s[1] - 0.35).abs() < 1e-6);
    let mut t = vec![0.5];
    apply_affinity(&mut t, &[0], &[], 2.0, 0.0).unwrap();
    assert_eq!(t, vec![0.5]);
    for bad in [-0.1, f32::NAN, f32::INFINITY] {
        assert!(apply_affinity(&mut t, &[0], &[true], bad, 0.7).is_err());
        assert!(apply_affinity(&mut t, &[0], &[true], 1.15, bad).is_err());
    }
}

#[test]
fn a_boost_keeps_a_negative_in_domain_route_ahead() {
    // Issue 35: as products, -0.6 x 1.15 = -0.69 fell below -0.8 x 0.7 = -0.56.
    let mut s = vec![-0.6, -0.8];
    apply_affinity(&mut s, &[0, 1], &[true, false], 1.15, 0.7).unwrap();
    assert!(s[0] > s[1], "{s:?}");
    assert!((s[0] - -0.6 / 1.15).abs() < 1e-6 && (s[1] - -0.8 / 0.7).abs() < 1e-6);
    // -inf stays removed; a zero penalty leaves a negative score finite and last.
    assert_eq!(affinity_scale(f32::NEG_INFINITY, 0.0), f32::NEG_INFINITY);
    assert_eq!(affinity_scale(-0.5, 0.0), f32::MIN);
    assert_eq!(affinity_scale(0.5, 0.0), 0.0);
}

/// How many of `s` are above `s[i]` (strictly, or level with it too), `i` left out.
fn above(s: &[f32], i: usize, or_level: bool) -> usize {
    (0..s.len())
        .filter(|&j| j != i && (s[j] > s[i] || (or_level && s[j] == s[i])))
        .count()
}

/// Scores of any sign (beyond [-1, 1]: a lexical bias adds to cosines), a few at -inf.
fn any_scores() -> impl proptest::strategy::Strategy<Value = Vec<f32>> {
    use proptest::prelude::*;
    proptest::collection::vec(
        prop_oneof![8 => -3.0f32..3.0, 1 => Just(0.0f32), 1 => Just(f32::NEG_INFINITY)],
        1..24,
    )
}

proptest::proptest! {
    #[test]
    fn a_boost_never_lowers_a_rank_and_a_demotion_never_raises_one(
        s in any_scores(),
        dom in proptest::collection::vec(0u32..3, 24),
        active in proptest::collection::vec(proptest::bool::ANY, 3),
        boost in 1.0f32..4.0,
        penalty in 0.0f32..1.0,
    ) {
        let domains = &dom[..s.len()];
        let mut adj = s.clone();
        apply_affinity(&mut adj, domains, &active, boost, penalty).unwrap();
        let mult = affinity_multipliers(domains, &active, boost, penalty);
        for (i, &m) in mult.iter().enumerate() {
            if m >= 1.0 {
                // Boosted (or untouched): no more routes strictly above it than before.
                proptest::prop_assert!(above(&adj, i, false) <= above(&s, i, false),
                    "route {} rose from {:?} to {:?}", i, s, adj);
            }
            if m <= 1.0 {
                // Demoted (or untouched): every route at or above it before still is.
                proptest::prop_assert!(above(&adj, i, true) >= above(&s, i, true),
                    "route {} fell from {:?} to {:?}", i, s, adj);
            }
        }
    }

    #[test]
    fn the_scale_is_monotone_and_the_former_product_on_positive_scores(
        a in -3.0f32..3.0, b in -3.0f32..3.0, m in 0.0f32..4.0,
    ) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        proptest::prop_assert!(affinity_scale(lo, m) <= affinity_scale(hi, m));
        if m >= 1.0 {
            proptest::prop_assert!(affinity_scale(a, m) >= a);
        } else {
            proptest::prop_assert!(affinity_scale(a, m) <= a);
        }
        if a >= 0.0 {
            proptest::prop_assert_eq!(affinity_scale(a, m).to_bits(), (a * m).to_bits());
        }
    }
}

#[test]
fn collision_rules() {
    let c = detect_collision(&[0.80, 0.75, 0.2], &[0, 1, 1], 0.08)
        .unwrap()
        .unwrap();
    assert_eq!((c.first, c.second), (0, 1));
    assert!(detect_collision(&[0.80, 0.75], &[0, 0], 0.08)
        .unwrap()
        .is_none());
    assert!(detect_collision(&[0.80, 0.70], &[0, 1], 0.08)
        .unwrap()
        .is_none());
    assert!(detect_collision(&[0.8], &[0], 0.08).unwrap().is_none());
}
