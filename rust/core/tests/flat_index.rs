//! FlatIndex: add/search/labels, typed rejection of bad input, update/remove.

use routecore_core::index::*;
use routecore_core::{Error, StorageKind};

fn idx() -> FlatIndex {
    let mut i = FlatIndex::new(2, StorageKind::F32, true).unwrap();
    i.add(
        &[10, 20, 30],
        &[1.0, 0.0, 0.0, 2.0, 1.0, 1.0],
        Some(&["a", "b", "a"]),
        Some(&["x", "y", "x"]),
    )
    .unwrap();
    i
}

#[test]
fn add_search_labels() {
    let i = idx();
    let r = i.search(&[1.0, 0.1], 2).unwrap();
    assert_eq!(r.ids, vec![10, 30]);
    assert_eq!(i.label_names()[r.labels[1] as usize], "a");
    assert!((r.scores[0] - 0.9950372).abs() < 1e-5);
}

#[test]
fn bad_input_leaves_index_unchanged() {
    let mut i = idx();
    assert!(matches!(
        i.add(&[10], &[1.0, 0.0], None, None),
        Err(Error::DuplicateId(10))
    ));
    assert!(matches!(
        i.add(&[1, 1], &[1.0, 0.0, 1.0, 0.0], None, None),
        Err(Error::DuplicateId(1))
    ));
    assert!(matches!(
        i.add(&[1], &[1.0, f32::NAN], None, None),
        Err(Error::NonFinite { .. })
    ));
    assert!(matches!(
        i.add(&[1], &[1.0, 0.0, 3.0], None, None),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(i.remove(&[10, 99]), Err(Error::UnknownId(99))));
    assert!(matches!(
        i.update(&[99], &[1.0, 0.0], None, None),
        Err(Error::UnknownId(99))
    ));
    assert!(matches!(i.search(&[1.0, 0.0], 0), Err(Error::BadK { .. })));
    assert!(matches!(i.search(&[1.0, 0.0], 4), Err(Error::BadK { .. })));
    assert_eq!(i.len(), 3);
    assert_eq!(i.search(&[0.0, 1.0], 1).unwrap().ids, vec![20]);
}

#[test]
fn remove_and_update_keep_mapping() {
    let mut i = idx();
    i.remove(&[10]).unwrap();
    assert_eq!(i.row_of(30), Some(0));
    i.update(&[30], &[0.0, -1.0], Some(&["c"]), None).unwrap();
    let r = i.search(&[0.0, -1.0], 1).unwrap();
    assert_eq!(
        (r.ids[0], i.label_names()[r.labels[0] as usize].as_str()),
        (30, "c")
    );
    i.remove(&[20, 30]).unwrap();
    assert!(matches!(i.search(&[1.0, 0.0], 1), Err(Error::EmptyIndex)));
}

#[test]
fn route_rows_follow_writes() {
    let mut i = idx();
    let a = i.label_code("a").unwrap() as usize;
    let b = i.label_code("b").unwrap() as usize;
    assert_eq!(i.route_rows(a), &[0, 2]);
    assert_eq!(i.route_rows(b), &[1]);
    assert_eq!(i.route_rows(99), &[] as &[u32]);
    assert!(!i.one_row_per_label());
    assert_eq!(i.label_runs(), &[0, 1, 2, 3]); // a, b, a
    i.remove(&[10]).unwrap(); // the last row moves into row 0
    assert_eq!(i.route_rows(a), &[0]);
    assert!(i.one_row_per_label());
    assert_eq!(i.label_runs(), &[0, 1, 2]); // a, b
    i.update(&[20], &[0.0, 1.0], Some(&["a"]), None).unwrap();
    assert_eq!(i.route_rows(a), &[0, 1]);
    assert_eq!(i.route_rows(b), &[] as &[u32]);
    assert_eq!(i.label_runs(), &[0, 2]); // a, a: one run
}

#[test]
fn prepared_queries_are_aligned_copies_normalised_only_when_asked() {
    // A query slice one float past a cache line, as numpy often hands it over.
    let raw: Vec<f32> = (0..2 * 384 + 1).map(|i| (i % 5) as f32 - 2.0).collect();
    let q = &raw[1..];
    for normalize in [true, false] {
        let i = FlatIndex::new(384, StorageKind::F32, normalize).unwrap();
        let (nq, p) = i.prepare_queries(q).unwrap();
        assert_eq!(nq, 2);
        assert_eq!(p.as_ptr() as usize % 64, 0, "normalize={normalize}");
        if normalize {
            let n: f32 = p[..384].iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-5);
        } else {
            assert_eq!(&p[..], q);
        }
    }
    // Aligned queries that need no normalising are read in place.
    let mut a = routecore_core::kernels::aligned::AlignedVec::new();
    a.extend_from_slice(q);
    let i = FlatIndex::new(384, StorageKind::F32, false).unwrap();
    let (_, p) = i.prepare_queries(&a).unwrap();
    assert!(matches!(p, Queries::Borrowed(_)));
    assert_eq!(p.as_ptr(), a.as_ptr());
}
