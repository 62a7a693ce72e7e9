//! The static encoder (issue 38) on a synthetic table over MiniLM's real tokenizer: a text's
//! embedding is the same alone and in any batch (bit for bit), and equals the normalised mean of
//! its pieces' rows computed here. Needs ../shared; outside CI its absence skips with a message.

use std::path::PathBuf;
use std::sync::OnceLock;

use half::f16;
use proptest::prelude::*;
use routecore_core::encoder::static_model::{EMBEDDINGS_FILE, TOKEN_IDS_FILE};
use routecore_core::encoder::StaticEncoder;

const DIM: usize = 8;

/// Rows for every other id of the first 8,000 (a deterministic pattern), so that some
/// pieces of a text have no row.
fn table_dir() -> Option<PathBuf> {
    let tok = routecore_core::testing::shared_model_file("all-minilm-l6-v2/tokenizer.json")?;
    let dir = std::env::temp_dir().join(format!("rc-static-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&tok, dir.join("tokenizer.json")).unwrap();
    let ids: Vec<u32> = (0..8000u32).step_by(2).collect();
    let cfg = format!(r#"{{"kind":"static","dim":{DIM},"rows":{}}}"#, ids.len());
    std::fs::write(dir.join("config.json"), cfg).unwrap();
    let mut emb = Vec::new();
    for &id in &ids {
        for j in 0..DIM as u32 {
            let x = ((id * 7 + j * 13) % 29) as f32 / 29.0 - 0.5;
            emb.extend_from_slice(&f16::from_f32(x).to_le_bytes());
        }
    }
    std::fs::write(dir.join(EMBEDDINGS_FILE), emb).unwrap();
    let raw: Vec<u8> = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(dir.join(TOKEN_IDS_FILE), raw).unwrap();
    Some(dir)
}

fn encoder() -> Option<&'static StaticEncoder> {
    static ENC: OnceLock<Option<StaticEncoder>> = OnceLock::new();
    ENC.get_or_init(|| {
        let dir = table_dir()?;
        let enc = StaticEncoder::load(&dir).unwrap(); // the table is read into memory
        std::fs::remove_dir_all(&dir).unwrap();
        Some(enc)
    })
    .as_ref()
}

/// The expected embedding: the f16 rows of the even ids below 8,000, averaged and normalised.
fn reference(ids: &[u32]) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    let kept: Vec<u32> = ids
        .iter()
        .copied()
        .filter(|&i| i < 8000 && i % 2 == 0)
        .collect();
    for &id in &kept {
        for (j, o) in v.iter_mut().enumerate() {
            let x = ((id * 7 + j as u32 * 13) % 29) as f32 / 29.0 - 0.5;
            *o += f16::from_f32(x).to_f32();
        }
    }
    if kept.is_empty() {
        return v;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn batch_invariant_and_matches_reference(
        texts in prop::collection::vec("[a-z ]{0,30}|\\PC{0,12}", 1..10)
    ) {
        let Some(enc) = encoder() else { return Ok(()); };
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let batch = enc.encode(&refs).unwrap();
        let (ids, _) = enc.tokenize(&refs).unwrap();
        for (i, t) in refs.iter().enumerate() {
            let alone = enc.encode(&[t]).unwrap();
            prop_assert_eq!(&alone.data[..], &batch.data[i * DIM..(i + 1) * DIM]);
            let want = reference(&ids[i]);
            for (a, b) in alone.data.iter().zip(&want) {
                prop_assert!((a - b).abs() < 1e-5, "{t:?}: {:?} vs {want:?}", alone.data);
            }
        }
    }
}
