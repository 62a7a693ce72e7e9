//! The encoder's tokenizer (`encoder::TextTokenizer`, a sorted-piece unigram model for
//! SentencePiece vocabularies) against `tokenizers`' own, on the bundled models'
//! `tokenizer.json`: the same ids, pieces and offsets on real text in English, French and
//! Chinese, on strings of the vocabulary's own pieces (every script it knows), and on
//! arbitrary Unicode. Needs ../shared; outside CI its absence skips with a message.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use routecore_core::encoder::TextTokenizer;
use tokenizers::{Encoding, Model, Tokenizer};

fn model_dir(name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/models")
        .join(name);
    if dir.is_dir() {
        return Some(dir);
    }
    let msg = format!("skipping: {} not found", dir.display());
    assert!(std::env::var_os("CI").is_none(), "{msg}");
    eprintln!("{msg}");
    None
}

struct Pair {
    theirs: Tokenizer,
    ours: TextTokenizer,
}

fn pair(name: &str) -> Option<Pair> {
    let path = model_dir(name)?.join("tokenizer.json");
    let text = std::fs::read_to_string(&path).unwrap();
    Some(Pair {
        theirs: Tokenizer::from_file(&path).unwrap(),
        ours: serde_json::from_str(&text).unwrap(),
    })
}

fn same(a: &Encoding, b: &Encoding, text: &str) {
    assert_eq!(a.get_ids(), b.get_ids(), "ids of {text:?}");
    assert_eq!(a.get_tokens(), b.get_tokens(), "pieces of {text:?}");
    assert_eq!(a.get_offsets(), b.get_offsets(), "offsets of {text:?}");
}

impl Pair {
    fn check(&self, text: &str) {
        for special in [true, false] {
            let theirs = self.theirs.encode(text, special).unwrap();
            let ours = self.ours.encode(text, special).unwrap();
            same(&theirs, &ours, text);
        }
    }
}

/// Texts of the dev splits: CLINC150 (val), BANKING77 (test), MASSIVE en/fr/zh (dev).
fn dataset_texts() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets");
    let files = [
        "clinc150/val.jsonl",
        "banking77/test.jsonl",
        "massive/en-US/dev.jsonl",
        "massive/fr-FR/dev.jsonl",
        "massive/zh-CN/dev.jsonl",
    ];
    let mut texts = Vec::new();
    for f in files {
        let body = std::fs::read_to_string(root.join(f)).unwrap();
        for line in body.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            texts.push(row["text"].as_str().unwrap().to_string());
        }
    }
    texts
}

/// Strings of the vocabulary's own pieces, every `step`-th one, five at a time, joined
/// with and without spaces: every script the model knows.
fn piece_texts(p: &Pair, step: usize) -> Vec<String> {
    let size = p.theirs.get_model().get_vocab_size() as u32;
    let pieces: Vec<String> = (0..size)
        .step_by(step)
        .filter_map(|id| p.theirs.get_model().id_to_token(id))
        .map(|t| t.replace('▁', " "))
        .collect();
    pieces
        .chunks(5)
        .flat_map(|c| [c.concat(), c.join(" ")])
        .collect()
}

#[test]
fn e5_loads_the_fast_unigram_and_matches_on_real_text() {
    let Some(p) = pair("multilingual-e5-small") else {
        return;
    };
    assert!(matches!(
        p.ours.get_model(),
        routecore_core::encoder::unigram::TokenModel::Unigram(_)
    ));
    assert_eq!(p.ours.get_vocab_size(true), p.theirs.get_vocab_size(true));
    assert_eq!(p.ours.get_vocab(true), p.theirs.get_vocab(true));
    let texts = dataset_texts();
    assert!(texts.len() > 8_000, "{} dataset texts", texts.len());
    for t in &texts {
        p.check(t);
    }
    for t in piece_texts(&p, 37) {
        p.check(&t);
    }
    for t in [
        "",
        " ",
        "<s>",
        "a</s>b<mask>",
        "\u{0}\u{1F525}\u{1F525} help!!",
        "ｆｕｌｌ　ｗｉｄｔｈ",
    ] {
        p.check(t);
    }
}

#[test]
fn a_wordpiece_tokenizer_loads_through_tokenizers() {
    let Some(p) = pair("all-minilm-l6-v2") else {
        return;
    };
    assert!(matches!(
        p.ours.get_model(),
        routecore_core::encoder::unigram::TokenModel::Other(_)
    ));
    for t in dataset_texts().iter().take(2_000) {
        p.check(t);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn e5_matches_on_arbitrary_unicode(text in "\\PC{0,40}|.{0,40}|[a-zé ]{0,30}") {
        if let Some(p) = E5.as_ref() {
            p.check(&text);
        }
    }
}

static E5: std::sync::LazyLock<Option<Pair>> =
    std::sync::LazyLock::new(|| pair("multilingual-e5-small"));

/// A `tokenizer.json` of a unigram `vocab` (id 0 is `<unk>`) and nothing else.
fn unigram_json(vocab: &[(String, f64)]) -> String {
    let mut pieces = vec![serde_json::json!(["<unk>", 0.0])];
    pieces.extend(vocab.iter().map(|(p, s)| serde_json::json!([p, s])));
    serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": null, "post_processor": null, "decoder": null,
        "model": {"type": "Unigram", "unk_id": 0, "vocab": pieces, "byte_fallback": false},
    })
    .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Small vocabularies with repeated pieces (the last id wins, as in `tokenizers`) and pieces
    /// JSON must escape (read as owned strings, not borrowed): the same ids, vocabulary and pieces.
    #[test]
    fn small_vocabularies_match(
        vocab in proptest::collection::vec(("[ab\"\\\\é]{1,3}", -9.0f64..-0.1), 1..24),
        text in "[ab\"\\\\éx]{0,16}",
    ) {
        let json = unigram_json(&vocab);
        let theirs: Tokenizer = json.parse().unwrap();
        let ours: TextTokenizer = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(ours.get_vocab(true), theirs.get_vocab(true));
        for id in 0..=vocab.len() as u32 {
            prop_assert_eq!(ours.id_to_token(id), theirs.id_to_token(id));
        }
        prop_assert_eq!(ours.id_to_token(vocab.len() as u32 + 1), None);
        same(&theirs.encode(text.as_str(), false).unwrap(), &ours.encode(text.as_str(), false).unwrap(), &text);
    }
}
