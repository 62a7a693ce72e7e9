//! The tokenizer's model, loaded in a tenth of the time `tokenizers` takes for a
//! SentencePiece unigram vocabulary.
//!
//! `tokenizers` builds a byte trie of one hash map per node for a unigram model: for
//! multilingual-e5-small's 250k pieces that is about 0.6 s of the 0.8 s a
//! `tokenizer.json` takes to load, on every encoder load (every CLI call). [`FastUnigram`]
//! keeps one hash map of the pieces instead, and looks up each prefix up to the longest
//! piece (pre-tokenized words are short). Its Viterbi pass is the
//! one of `tokenizers` 0.22 (`Unigram::encode_optimized`), step for step: the same
//! candidates in the same order, the same strict comparisons, the same unknown-piece
//! score and fusing. `tests/unigram_parity.rs` checks the ids against `tokenizers` on
//! real text in many scripts and on arbitrary Unicode.
//!
//! Any other model (WordPiece, BPE, a unigram with byte fallback) loads through
//! `tokenizers` itself ([`TokenModel::Other`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::models::{ModelWrapper, TrainerWrapper};
use tokenizers::{
    DecoderWrapper, Model, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper, Token,
    TokenizerImpl,
};

/// The score `tokenizers` gives an unknown character: the vocabulary's lowest, minus this.
const UNK_PENALTY: f64 = 10.0;

/// The tokenizer an [`crate::encoder::Encoder`] runs: `tokenizers`' pipeline around a
/// [`TokenModel`].
pub type TextTokenizer = TokenizerImpl<
    TokenModel,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// A unigram model whose pieces are looked up in one hash map.
#[derive(Clone, Debug)]
pub struct FastUnigram {
    /// Pieces and their scores, by id.
    vocab: Vec<(String, f64)>,
    /// Each piece's id; of repeated pieces the last id (as `tokenizers` fills its map).
    ids: FxHashMap<String, u32>,
    /// The longest piece, in bytes: no match is longer.
    longest: usize,
    min_score: f64,
    unk_id: Option<usize>,
}

impl FastUnigram {
    /// The model of `vocab` (piece, score), `unk_id` naming the unknown piece.
    pub fn new(vocab: Vec<(String, f64)>, unk_id: Option<usize>) -> Result<Self, String> {
        if let Some(unk) = unk_id {
            if vocab.is_empty() {
                return Err("the vocabulary is empty but at least <unk> is needed".into());
            }
            if unk >= vocab.len() {
                return Err("the `unk_id` is larger than vocabulary size".into());
            }
        }
        if vocab.len() > u32::MAX as usize {
            return Err(format!(
                "{} pieces are more than u32 ids can name",
                vocab.len()
            ));
        }
        let mut ids = FxHashMap::with_capacity_and_hasher(vocab.len(), Default::default());
        for (id, (piece, _)) in vocab.iter().enumerate() {
            ids.insert(piece.clone(), id as u32);
        }
        let longest = vocab.iter().map(|v| v.0.len()).max().unwrap_or(0);
        let min_score = vocab.iter().map(|v| v.1).fold(f64::INFINITY, f64::min);
        Ok(FastUnigram {
            vocab,
            ids,
            longest,
            min_score,
            unk_id,
        })
    }

    /// Calls `found(id, length)` for each piece that is a prefix of `text`, shortest first
    /// (the order of `tokenizers`' trie walk).
    fn prefixes(&self, text: &str, mut found: impl FnMut(u32, usize)) {
        for (at, ch) in text.char_indices() {
            let end = at + ch.len_utf8();
            if end > self.longest {
                return;
            }
            if let Some(&id) = self.ids.get(&text[..end]) {
                found(id, end);
            }
        }
    }

    /// The pieces of `sentence` with their ids: `tokenizers`' `encode_optimized`.
    fn encode(&self, sentence: &str) -> tokenizers::Result<Vec<(String, u32)>> {
        #[derive(Clone, Copy)]
        struct Best {
            id: usize,
            score: f64,
            starts_at: Option<usize>,
        }
        let size = sentence.len();
        if size == 0 {
            return Ok(Vec::new());
        }
        let unk_score = self.min_score - UNK_PENALTY;
        let mut best = vec![
            Best {
                id: 0,
                score: 0.0,
                starts_at: None
            };
            size + 1
        ];
        let mut starts_at = 0;
        while starts_at < size {
            let here = best[starts_at].score;
            let mblen = sentence[starts_at..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
            let mut has_single = false;
            self.prefixes(&sentence[starts_at..], |id, length| {
                let target = &mut best[starts_at + length];
                let candidate = self.vocab[id as usize].1 + here;
                if target.starts_at.is_none() || candidate > target.score {
                    *target = Best {
                        id: id as usize,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
                has_single |= length == mblen;
            });
            if !has_single {
                let target = &mut best[starts_at + mblen];
                let candidate = unk_score + here;
                if target.starts_at.is_none() || candidate > target.score {
                    let unk = self
                        .unk_id
                        .ok_or("Encountered an unknown token but `unk_id` is missing")?;
                    *target = Best {
                        id: unk,
                        score: candidate,
                        starts_at: Some(starts_at),
                    };
                }
            }
            starts_at += mblen;
        }
        // Back from the end; runs of unknown pieces fuse into one.
        let mut pieces: Vec<(String, u32)> = Vec::new();
        let mut unknown_from: Option<usize> = None;
        let mut unknown_to = size;
        let mut ends_at = size;
        while ends_at > 0 {
            let node = best[ends_at];
            let from = node.starts_at.expect("every position is reached");
            if Some(node.id) == self.unk_id {
                if unknown_from.is_none() {
                    unknown_to = ends_at;
                }
                unknown_from = Some(from);
            } else {
                if let Some(u) = unknown_from.take() {
                    pieces.push(self.fused(&sentence[u..unknown_to])?);
                }
                pieces.push((sentence[from..ends_at].to_string(), node.id as u32));
            }
            ends_at = from;
        }
        if let Some(u) = unknown_from {
            pieces.push(self.fused(&sentence[u..unknown_to])?);
        }
        pieces.reverse();
        Ok(pieces)
    }

    /// A run of unknown pieces: its id is the piece's own if the vocabulary has one.
    fn fused(&self, text: &str) -> tokenizers::Result<(String, u32)> {
        let id = match self.token_to_id(text) {
            Some(id) => id,
            None => self
                .unk_id
                .ok_or("Encountered an unknown token but `unk_id` is missing")?
                as u32,
        };
        Ok((text.to_string(), id))
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }
}

/// The model of a [`TextTokenizer`]: [`FastUnigram`] for a unigram vocabulary without
/// byte fallback, `tokenizers`' own model otherwise.
#[derive(Clone, Debug)]
pub enum TokenModel {
    /// A unigram vocabulary without byte fallback.
    Unigram(FastUnigram),
    /// Any other model, as `tokenizers` loads it.
    Other(Box<ModelWrapper>),
}

impl<'de> Deserialize<'de> for TokenModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Kind {
            #[serde(rename = "type")]
            kind: Option<String>,
            #[serde(default)]
            byte_fallback: bool,
        }
        #[derive(Deserialize)]
        struct Pieces {
            unk_id: Option<usize>,
            vocab: Vec<(String, f64)>,
        }
        use serde::de::Error;
        let raw = Box::<RawValue>::deserialize(d)?;
        let kind: Kind = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
        if kind.kind.as_deref() == Some("Unigram") && !kind.byte_fallback {
            let p: Pieces = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
            return FastUnigram::new(p.vocab, p.unk_id)
                .map(TokenModel::Unigram)
                .map_err(D::Error::custom);
        }
        serde_json::from_str(raw.get())
            .map(|m| TokenModel::Other(Box::new(m)))
            .map_err(D::Error::custom)
    }
}

impl Model for TokenModel {
    type Trainer = TrainerWrapper;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        let u = match self {
            TokenModel::Unigram(u) => u,
            TokenModel::Other(m) => return m.tokenize(sequence),
        };
        let mut offset = 0;
        let pieces = u.encode(sequence)?;
        let mut tokens = Vec::with_capacity(pieces.len());
        for (value, id) in pieces {
            let len = value.len();
            tokens.push(Token::new(id, value, (offset, offset + len)));
            offset += len;
        }
        Ok(tokens)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            TokenModel::Unigram(u) => u.token_to_id(token),
            TokenModel::Other(m) => m.token_to_id(token),
        }
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        match self {
            TokenModel::Unigram(u) => u.vocab.get(id as usize).map(|v| v.0.clone()),
            TokenModel::Other(m) => m.id_to_token(id),
        }
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        match self {
            TokenModel::Unigram(u) => u.ids.iter().map(|(k, &v)| (k.clone(), v)).collect(),
            TokenModel::Other(m) => m.get_vocab(),
        }
    }

    fn get_vocab_size(&self) -> usize {
        match self {
            TokenModel::Unigram(u) => u.vocab.len(),
            TokenModel::Other(m) => m.get_vocab_size(),
        }
    }

    fn save(&self, folder: &Path, prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        match self {
            TokenModel::Unigram(_) => Err("routecore's unigram model is read-only".into()),
            TokenModel::Other(m) => m.save(folder, prefix),
        }
    }

    fn get_trainer(&self) -> TrainerWrapper {
        match self {
            TokenModel::Unigram(_) => TrainerWrapper::UnigramTrainer(UnigramTrainer::default()),
            TokenModel::Other(m) => m.get_trainer(),
        }
    }
}
