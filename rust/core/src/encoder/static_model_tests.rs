use super::*;

/// A folder with MiniLM's tokenizer and a table of `rows` rows of width 4.
fn folder(tag: &str, rows: &[(u32, [f32; 4])]) -> Option<PathBuf> {
    let tok = crate::testing::shared_model_file("all-minilm-l6-v2/tokenizer.json")?;
    let dir = std::env::temp_dir().join(format!("rc-static-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&tok, dir.join("tokenizer.json")).unwrap();
    let cfg = format!(r#"{{"kind":"static","dim":4,"rows":{}}}"#, rows.len());
    std::fs::write(dir.join("config.json"), cfg).unwrap();
    let mut emb = Vec::new();
    let mut ids = Vec::new();
    for (id, r) in rows {
        ids.extend_from_slice(&id.to_le_bytes());
        for x in r {
            emb.extend_from_slice(&f16::from_f32(*x).to_le_bytes());
        }
    }
    std::fs::write(dir.join(EMBEDDINGS_FILE), emb).unwrap();
    std::fs::write(dir.join(TOKEN_IDS_FILE), ids).unwrap();
    Some(dir)
}

#[test]
fn mean_of_known_rows_normalised() {
    // MiniLM's WordPiece: "hello" = 7592, "world" = 2088.
    let Some(dir) = folder(
        "mean",
        &[(7592, [1.0, 0.0, 0.0, 0.0]), (2088, [0.0, 3.0, 0.0, 0.0])],
    ) else {
        return;
    };
    let enc = StaticEncoder::load(&dir).unwrap();
    let e = enc.encode(&["hello world", "hello", "zebra", ""]).unwrap();
    let s = 1.0 / 10f32.sqrt();
    let want = [s, 3.0 * s, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    for (a, b) in e.data[..8].iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{:?}", &e.data[..8]);
    }
    assert!(
        e.data[8..].iter().all(|&x| x == 0.0),
        "no known piece: zeros"
    );
    let (ids, _) = enc.tokenize(&["hello world"]).unwrap();
    assert_eq!(ids, vec![vec![7592, 2088]], "no special tokens");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_large_batch_split_across_threads_is_each_text_alone() {
    let Some(dir) = folder(
        "batch",
        &[
            (7592, [1.0, 0.0, 0.5, 0.0]),
            (2088, [0.0, 3.0, 0.0, 0.0]),
            (2376, [0.0, 0.0, 0.0, 2.0]),
        ],
    ) else {
        return;
    };
    let enc = StaticEncoder::load(&dir).unwrap();
    let words = ["hello", "world", "zebra", "hello world", "world hello", ""];
    let texts: Vec<String> = (0..3 * PARALLEL_TEXTS + 5)
        .map(|i| format!("{} {}", words[i % 6], words[(i / 6) % 6]))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batch = enc.encode(&refs).unwrap();
    assert_eq!(batch.n, refs.len());
    for (i, t) in refs.iter().enumerate() {
        let one = enc.encode(&[t]).unwrap();
        assert_eq!(
            &batch.data[i * 4..(i + 1) * 4],
            &one.data[..],
            "text {i}: {t:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn refuses_bad_files() {
    let Some(dir) = folder("bad", &[(7592, [1.0, 0.0, 0.0, 0.0])]) else {
        return;
    };
    std::fs::write(dir.join(TOKEN_IDS_FILE), 99_999_999u32.to_le_bytes()).unwrap();
    assert!(matches!(StaticEncoder::load(&dir), Err(Error::Model(_))));
    std::fs::write(dir.join(EMBEDDINGS_FILE), [0u8; 3]).unwrap();
    assert!(matches!(StaticEncoder::load(&dir), Err(Error::Model(_))));
    std::fs::remove_dir_all(&dir).unwrap();
}
