//! The lexical index: tokenizer invariants, BM25 against a naive reference,
//! label maxima and leave-one-out, and its file format under damage.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use proptest::prelude::*;
use routecore_core::lexical::{fold, tokens, LexicalIndex, Stemmer, NO_DOC};
use routecore_core::Error;

/// Characters that exercise every path of the tokenizer.
fn text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => proptest::sample::select(
            "aZ9 _-.'?,éÉôƯượđĐœßİıΣσςﬁＡ１²服务器宕机了한국がｶﾞ々ー・\u{301}\u{3099}\t".chars().collect::<Vec<_>>()
        ),
        1 => any::<char>(),
    ];
    proptest::collection::vec(ch, 0..40).prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn tokens_are_folded_and_stable(s in text()) {
        let t = tokens(&s);
        for tok in &t {
            prop_assert!(!tok.is_empty());
            prop_assert_eq!(&fold(tok), tok, "token {:?} of {:?} is not folded", tok, s);
            prop_assert_eq!(&tok.to_lowercase(), tok);
            prop_assert!(tokens(tok).contains(tok), "{:?} does not give itself back", tok);
        }
        // Tokenizing the tokens again finds nothing new.
        let seen: HashSet<&String> = t.iter().collect();
        for again in tokens(&t.join(" ")) {
            prop_assert!(seen.contains(&again), "{:?} from {:?}", again, s);
        }
        prop_assert_eq!(fold(&fold(&s)), fold(&s));
    }
}

/// BM25 by the book, in f64: per document, over the query's distinct terms
/// (tokens stemmed by `stemmer`; stop words stemmed alike).
fn reference(
    docs: &[String],
    stop: &[&str],
    query: &str,
    k1: f64,
    b: f64,
    stemmer: Stemmer,
) -> Vec<f64> {
    let st = stemmer.terms();
    let terms = |text: &str| -> Vec<String> {
        tokens(text)
            .iter()
            .map(|t| st.term(t).into_owned())
            .collect()
    };
    let stop: Vec<String> = stop.iter().flat_map(|w| terms(w)).collect();
    let keep = |t: &String| !stop.contains(t);
    let bags: Vec<HashMap<String, f64>> = docs
        .iter()
        .map(|d| {
            let mut m = HashMap::new();
            terms(d)
                .into_iter()
                .filter(keep)
                .for_each(|t| *m.entry(t).or_insert(0.0) += 1.0);
            m
        })
        .collect();
    let lens: Vec<f64> = bags.iter().map(|m| m.values().sum()).collect();
    let n = docs.len() as f64;
    let avg = lens.iter().sum::<f64>() / n;
    let avg = if avg > 0.0 { avg } else { 1.0 };
    let q: HashSet<String> = terms(query).into_iter().filter(keep).collect();
    bags.iter()
        .zip(&lens)
        .map(|(m, &len)| {
            q.iter()
                .filter_map(|t| m.get(t).map(|&tf| (t, tf)))
                .map(|(t, tf)| {
                    let df = bags.iter().filter(|o| o.contains_key(t)).count() as f64;
                    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg))
                })
                .sum()
        })
        .collect()
}

const WORDS: &[&str] = &[
    "get",
    "logs",
    "ha_get_logs",
    "searchFlights",
    "flights",
    "the",
    "de",
    "état",
    "etat",
    "INC12291856",
    "kafka",
    "服务器",
    "宕机",
    "đăng",
    "nhập",
    "Ticket",
    "reset",
    "password",
    "flight",
    "searching",
    "searches",
    "recherches",
    "recherche",
    "the_flights",
];

fn corpus() -> impl Strategy<Value = (Vec<String>, Vec<u32>, Vec<String>)> {
    let doc =
        proptest::collection::vec(proptest::sample::select(WORDS), 0..8).prop_map(|w| w.join(" "));
    let query =
        proptest::collection::vec(proptest::sample::select(WORDS), 0..5).prop_map(|w| w.join(" "));
    (1usize..60).prop_flat_map(move |n| {
        (
            proptest::collection::vec(doc.clone(), n),
            proptest::collection::vec(0u32..5, n),
            proptest::collection::vec(query.clone(), 1..6),
        )
    })
}

fn close(a: f32, b: f64) -> bool {
    (a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn bm25_matches_the_reference((docs, mut labels, queries) in corpus(),
                                  order in 0u8..3,
                                  k1 in prop_oneof![Just(1.2f32), 0.0f32..3.0],
                                  b in prop_oneof![Just(0.75f32), 0.0f32..=1.0],
                                  split in 0usize..25,
                                  stemmer in proptest::sample::select(Stemmer::ALL.to_vec())) {
        match order {
            // Labels in runs, as tables add them: the dense path's run maxima.
            1 => labels.sort_unstable(),
            // One document per label, in order (tool descriptions): scores go straight to labels.
            2 => labels = (0..docs.len() as u32).collect(),
            _ => {}
        }
        let stop = ["the", "de", "searches"];
        let mut ix = LexicalIndex::with_stemmer(&stop, k1, b, stemmer).unwrap();
        // Two batches give the same index as one.
        let cut = split.min(docs.len());
        ix.add(&docs[..cut], &labels[..cut]).unwrap();
        ix.add(&docs[cut..], &labels[cut..]).unwrap();
        let n_labels = docs.len().max(6);
        let ex: Vec<u32> = (0..queries.len()).map(|i| if i % 2 == 0 { NO_DOC } else { (i % docs.len()) as u32 }).collect();
        let batch = ix.score_labels_batch(&queries, n_labels, Some(&ex)).unwrap();
        for (i, q) in queries.iter().enumerate() {
            let want = reference(&docs, &stop, q, k1 as f64, b as f64, stemmer);
            let got = ix.score_docs(q);
            for (g, w) in got.iter().zip(&want) {
                prop_assert!(close(*g, *w), "doc score {} vs {} for {:?}", g, w, q);
            }
            let per_label = ix.score_labels(q, n_labels).unwrap();
            let row = &batch[i * n_labels..(i + 1) * n_labels];
            for l in 0..n_labels {
                let best = |skip: u32| (0..docs.len())
                    .filter(|&d| labels[d] as usize == l && d as u32 != skip)
                    .map(|d| want[d])
                    .fold(0.0, f64::max);
                prop_assert!(close(per_label[l], best(NO_DOC)));
                prop_assert!(close(row[l], best(ex[i])), "label {} query {} excluding {}", l, i, ex[i]);
            }
        }
        // The file gives back the same scores, bit for bit.
        let back = LexicalIndex::from_bytes(&ix.to_bytes(), Path::new("mem")).unwrap();
        prop_assert_eq!(back.n_terms(), ix.n_terms());
        prop_assert_eq!(back.stemmer(), stemmer);
        for q in &queries {
            prop_assert_eq!(back.score_docs(q), ix.score_docs(q));
        }
    }
}

/// The idf-weighted share of the query's distinct non-stop tokens held by a
/// document not in `exclude`, computed naively.
fn reference_coverage(docs: &[String], stop: &[&str], query: &str, exclude: &[u32]) -> f64 {
    let n = docs.len() as f64;
    let idf = |df: f64| (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
    let held_by: Vec<HashSet<String>> = docs
        .iter()
        .map(|d| tokens(d).into_iter().collect())
        .collect();
    let q: HashSet<String> = tokens(query)
        .into_iter()
        .filter(|t| !stop.contains(&t.as_str()))
        .collect();
    let (mut held, mut missed) = (0.0, 0.0);
    for t in &q {
        let df = (0..docs.len())
            .filter(|&d| !exclude.contains(&(d as u32)) && held_by[d].contains(t))
            .count() as f64;
        if df > 0.0 {
            held += idf(df);
        } else {
            missed += idf(0.0);
        }
    }
    if held + missed > 0.0 {
        held / (held + missed)
    } else {
        0.0
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn coverage_matches_the_reference((docs, labels, mut queries) in corpus(), drop in 0usize..3) {
        let stop = ["the", "de"];
        let mut ix = LexicalIndex::new(&stop, 1.2, 0.75).unwrap();
        ix.add(&docs, &labels).unwrap();
        queries.push("zzzunknown the".into());
        for (i, q) in queries.iter().enumerate() {
            let ex: Vec<u32> = (0..drop.min(docs.len())).map(|k| ((i + k) % docs.len()) as u32).collect();
            let got = ix.coverage(q, &ex);
            prop_assert!((0.0..=1.0).contains(&got));
            // A document named twice is left out once (it used to count twice).
            prop_assert_eq!(ix.coverage(q, &[ex.clone(), ex.clone()].concat()), got);
            // One tokenization for both gives the same as the two calls.
            let (labels, cover) = ix.score_labels_covered(q, 5).unwrap();
            prop_assert_eq!(labels, ix.score_labels(q, 5).unwrap());
            prop_assert_eq!(cover, ix.coverage(q, &[]));
            prop_assert!(close(got, reference_coverage(&docs, &stop, q, &ex)), "{} for {:?} excluding {:?}", got, q, ex);
        }
        // The batch with exclusion sets: label maxima over the other documents' BM25, and their coverage.
        let sets: Vec<Vec<u32>> = (0..queries.len())
            .map(|i| (0..drop.min(docs.len())).map(|k| ((i + 2 * k) % docs.len()) as u32).rev().collect())
            .collect();
        let (got, cover) = ix.score_labels_covered_batch(&queries, 5, Some(&sets)).unwrap();
        for (i, q) in queries.iter().enumerate() {
            let mut want = [0f32; 5];
            for (d, &v) in ix.score_docs(q).iter().enumerate() {
                if !sets[i].contains(&(d as u32)) {
                    want[labels[d] as usize] = want[labels[d] as usize].max(v);
                }
            }
            for l in 0..5 {
                prop_assert!(close(got[i * 5 + l], want[l] as f64), "label {} of {:?} without {:?}", l, q, sets[i]);
            }
            prop_assert_eq!(cover[i], ix.coverage(q, &sets[i]));
        }
    }
}

fn sample() -> LexicalIndex {
    let mut ix = LexicalIndex::new(&["the"], 1.2, 0.75).unwrap();
    ix.add(
        &[
            "get the logs",
            "ha_get_logs",
            "INC12291856 état",
            "服务器宕机了",
        ],
        &[0, 1, 2, 2],
    )
    .unwrap();
    ix
}

#[test]
fn labels_stop_words_and_arguments() {
    let ix = sample();
    assert_eq!((ix.len(), ix.stop_words()), (4, vec!["the"]));
    let s = ix.score_labels("The HA_get_logs please", 4).unwrap();
    assert!(s[1] > s[0] && s[0] > 0.0 && s[2] == 0.0 && s[3] == 0.0);
    assert_eq!(ix.score_labels("the", 3).unwrap(), vec![0.0; 3]);
    assert!(ix.score_labels("服务器", 3).unwrap()[2] > 0.0);
    assert!(matches!(
        ix.score_labels("x", 2),
        Err(Error::InvalidArgument(_))
    ));
    let q = ["logs", "etat"];
    assert!(ix.score_labels_batch(&q, 3, Some(&[0])).is_err());
    assert!(ix.score_labels_batch(&q, 3, Some(&[0, 4])).is_err());
    let r = ix.score_labels_batch(&q, 3, Some(&[1, 2])).unwrap();
    assert!(r[1] == 0.0 && r[0] > 0.0 && r[3 + 2] == 0.0);
    assert!(LexicalIndex::new(&[""], -1.0, 0.5).is_err());
    assert!(LexicalIndex::new(&[""], 1.0, 1.5).is_err());
    let mut e = LexicalIndex::new(&["x"], 1.2, 0.75).unwrap();
    assert!(e.add(&["a"], &[]).is_err());
    assert_eq!(
        e.score_labels_batch(&["a"], 0, None).unwrap(),
        Vec::<f32>::new()
    );
    assert!(e.memory_bytes() < 4096);
    e.add(&["a b", ""], &[0, 0]).unwrap();
    assert_eq!((e.n_terms(), e.n_postings()), (2, 2));
}

#[test]
fn label_bias_is_the_scaled_label_scores_after_its_lead() {
    let ix = sample();
    let (s, cover) = ix
        .score_labels_covered("get the logs, INC12291856", 3)
        .unwrap();
    let top = s.iter().copied().fold(0.0, f32::max);
    let f = (0.04 * cover as f64 / top as f64) as f32;
    let want: Vec<f32> = s.iter().map(|x| x * f).collect();
    for lead in [0, 1, 3] {
        let b = ix
            .label_bias("get the logs, INC12291856", 3, 0.04, lead)
            .unwrap()
            .unwrap();
        assert_eq!((&b[..lead], &b[lead..]), (&vec![0.0; lead][..], &want[..]));
    }
    assert_eq!(ix.label_bias("the", 3, 0.04, 1).unwrap(), None);
    assert_eq!(ix.label_bias("logs", 3, 0.0, 1).unwrap(), None);
    assert!(ix.label_bias("logs", 2, 0.04, 1).is_err());
}

#[test]
fn label_maxima_of_large_indexes_match_the_document_scores() {
    // Enough documents for several accumulator windows of the dense path, with
    // labels in long runs (routes), in short runs and shuffled.
    let n = 9_500usize;
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    let docs: Vec<String> = (0..n)
        .map(|_| {
            (0..1 + next() % 6)
                .map(|_| WORDS[next() % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let queries = [
        "kafka logs",
        "the server error restart",
        "vpn",
        "flight search weather",
    ];
    for labels in [
        (0..n).map(|d| (d / 100) as u32).collect::<Vec<u32>>(),
        (0..n).map(|d| (d / 3) as u32).collect(),
        (0..n).map(|_| (next() % 150) as u32).collect(),
    ] {
        let mut ix = LexicalIndex::new(&["the"], 1.2, 0.75).unwrap();
        ix.add(&docs, &labels).unwrap();
        let n_labels = *labels.iter().max().unwrap() as usize + 1;
        for q in queries {
            let per_doc = ix.score_docs(q);
            let mut want = vec![0f32; n_labels];
            for (d, &s) in per_doc.iter().enumerate() {
                let l = labels[d] as usize;
                want[l] = want[l].max(s);
            }
            assert_eq!(ix.score_labels(q, n_labels).unwrap(), want, "{q}");
            // A document left out in the last window.
            let gone = (n - 2) as u32;
            let mut w2 = vec![0f32; n_labels];
            for (d, &s) in per_doc
                .iter()
                .enumerate()
                .filter(|&(d, _)| d as u32 != gone)
            {
                w2[labels[d] as usize] = w2[labels[d] as usize].max(s);
            }
            assert_eq!(
                ix.score_labels_batch(&[q], n_labels, Some(&[gone]))
                    .unwrap(),
                w2,
                "{q}"
            );
        }
    }
}

/// Recompute the CRC of a modified file so that only the structure checks can catch it.
fn reseal(b: &mut [u8]) {
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..24]);
    h.update(&b[28..]);
    let c = h.finalize();
    b[24..28].copy_from_slice(&c.to_le_bytes());
}

fn corrupt(b: &[u8]) -> bool {
    matches!(
        LexicalIndex::from_bytes(b, Path::new("mem")),
        Err(Error::CorruptIndex { .. })
    )
}

#[test]
fn damaged_files_are_typed_errors() {
    let ix = sample();
    let b = ix.to_bytes();
    for cut in 0..b.len() {
        assert!(corrupt(&b[..cut]), "cut at {cut}");
    }
    for pos in 0..b.len() {
        for x in [0x01, 0x80, 0xff] {
            let mut t = b.clone();
            t[pos] ^= x;
            assert!(corrupt(&t), "flip {x:#x} at {pos}");
        }
    }
    let mut longer = b.clone();
    longer.push(0);
    assert!(corrupt(&longer));
    // Crafted files with a valid checksum.
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let stop_end = 28 + 8 + 4 + 4 + 3; // one stop word, "the"
    assert_eq!(u32_at(&b, stop_end), 4, "document count");
    let terms_at = stop_end + 4 + 8 * 4;
    let n_post = ix.n_postings();
    let last_doc = b.len() - 2 * n_post - 4;
    let cases: Vec<(usize, u32)> = vec![
        (8, 3),                   // a later format version
        (8, 0),                   // no format version
        (12, 3),                  // an unknown stemmer code
        (stop_end, u32::MAX),     // a huge document count
        (stop_end, 3),            // one document fewer than the arrays hold
        (terms_at, u32::MAX),     // a huge term count
        (28 + 8, u32::MAX),       // a huge stop word count
        (28 + 8 + 4, u32::MAX),   // a huge string length
        (28, f32::NAN.to_bits()), // k1
        (last_doc, 4),            // a posting naming an unknown document
        (last_doc, u32::MAX),
        (b.len() - 4, 0), // term frequencies of 0
    ];
    for (at, v) in cases {
        let mut t = b.clone();
        t[at..at + 4].copy_from_slice(&v.to_le_bytes());
        reseal(&mut t);
        assert!(corrupt(&t), "{v:#x} at {at}");
    }
    // The payload length and a well-formed but folded-differently stop word.
    let mut t = b.clone();
    t[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    reseal(&mut t);
    assert!(corrupt(&t));
    let mut t = b.clone();
    t[stop_end - 3..stop_end].copy_from_slice(b"THE");
    reseal(&mut t);
    assert!(corrupt(&t));
}

#[test]
fn version_1_files_load_unstemmed_and_keep_their_scores() {
    let ix = sample();
    let mut v1 = ix.to_bytes();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    reseal(&mut v1);
    let back = LexicalIndex::from_bytes(&v1, Path::new("mem")).unwrap();
    assert_eq!(back.stemmer(), Stemmer::None);
    assert_eq!(back.score_docs("get logs"), ix.score_docs("get logs"));
    // Version 1 had no stemmer: its own field must be 0.
    v1[12..16].copy_from_slice(&1u32.to_le_bytes());
    reseal(&mut v1);
    assert!(corrupt(&v1));
}

#[test]
fn stemmed_index_matches_inflected_forms_and_round_trips() {
    let mut ix = LexicalIndex::with_stemmer(&["searches"], 1.2, 0.75, Stemmer::English).unwrap();
    ix.add(
        &["search_flights to Paris", "get the weather forecasts"],
        &[0, 1],
    )
    .unwrap();
    assert_eq!(ix.terms_of("Searching flights"), ["search", "flight"]);
    // The stop word drops every form that stems like it.
    assert_eq!(ix.stop_words(), ["search"]);
    let s = ix.score_labels("a flight forecast", 2).unwrap();
    assert!(s[0] > 0.0 && s[1] > 0.0);
    let back = LexicalIndex::from_bytes(&ix.to_bytes(), Path::new("mem")).unwrap();
    assert_eq!(back.stemmer(), Stemmer::English);
    assert_eq!(back.to_bytes(), ix.to_bytes());
    assert_eq!(back.score_labels("a flight forecast", 2).unwrap(), s);
    assert!(matches!(
        "porter".parse::<Stemmer>(),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn save_and_load() {
    let dir = std::env::temp_dir().join(format!("routecore-lexical-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("lexical.rcl");
    let ix = sample();
    ix.save(&p).unwrap();
    let back = LexicalIndex::load(&p).unwrap();
    assert_eq!(back.to_bytes(), ix.to_bytes());
    assert!(matches!(
        LexicalIndex::load(&dir.join("missing")),
        Err(Error::Io { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}
