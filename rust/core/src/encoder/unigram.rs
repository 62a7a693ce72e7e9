//! The tokenizer's model, loaded in a tenth of the time `tokenizers` takes for a
//! SentencePiece unigram vocabulary.
//!
//! `tokenizers` builds a byte trie of one hash map per node for a unigram model: for
//! multilingual-e5-small's 250k pieces that is about 0.6 s of the 0.8 s a
//! `tokenizer.json` takes to load, on every encoder load (every CLI call). [`FastUnigram`]
//! keeps the pieces in one string and their ids in one hash table instead (0.06 s to load,
//! under 1 ms to drop, on a Xeon EMR), and looks up each prefix up to the longest piece
//! (pre-tokenized words are short). Its Viterbi pass is the
//! one of `tokenizers` 0.22 (`Unigram::encode_optimized`), step for step: the same
//! candidates in the same order, the same strict comparisons, the same unknown-piece
//! score and fusing. `tests/unigram_parity.rs` checks the ids against `tokenizers` on
//! real text in many scripts and on arbitrary Unicode.
//!
//! Any other model (WordPiece, BPE, a unigram with byte fallback) loads through
//! `tokenizers` itself ([`TokenModel::Other`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use std::borrow::Cow;
use std::hash::BuildHasher;

use serde::de::{Error as _, SeqAccess, Visitor};
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

/// A unigram model whose pieces are looked up in one hash table.
///
/// The pieces live in one string (`text`, cut at `ends`) and the table holds ids only: loading
/// and dropping e5's 250k pieces costs three allocations instead of half a million.
#[derive(Clone, Debug)]
pub struct FastUnigram {
    /// Every piece, by id, end to end.
    text: String,
    /// Where each piece ends in `text`; piece `i` starts where piece `i - 1` ends.
    ends: Vec<u32>,
    /// Each piece's score, by id.
    scores: Vec<f64>,
    /// The ids, hashed by their piece; of repeated pieces the last id (as `tokenizers` fills its map).
    ids: HashTable<u32>,
    /// The longest piece, in bytes: no match is longer.
    longest: usize,
    min_score: f64,
    unk_id: Option<usize>,
}

/// The vocabulary as `tokenizer.json` lists it, read straight into one string.
#[derive(Default)]
struct Pieces {
    text: String,
    ends: Vec<u32>,
    scores: Vec<f64>,
}

impl Pieces {
    fn push(&mut self, piece: &str, score: f64) -> Result<(), String> {
        self.text.push_str(piece);
        let end = u32::try_from(self.text.len())
            .map_err(|_| "the vocabulary's pieces exceed 4 GiB".to_string())?;
        self.ends.push(end);
        self.scores.push(score);
        Ok(())
    }
}

impl<'de> Deserialize<'de> for Pieces {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// One `[piece, score]` pair; the piece borrowed from the JSON text when it has no escapes.
        #[derive(Deserialize)]
        struct Pair<'a>(#[serde(borrow)] Cow<'a, str>, f64);
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Pieces;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of [piece, score] pairs")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Pieces, A::Error> {
                let mut p = Pieces::default();
                if let Some(n) = seq.size_hint() {
                    p.ends.reserve(n);
                    p.scores.reserve(n);
                }
                while let Some(Pair(piece, score)) = seq.next_element::<Pair>()? {
                    p.push(&piece, score).map_err(A::Error::custom)?;
                }
                Ok(p)
            }
        }
        d.deserialize_seq(Visit)
    }
}

fn piece_of<'a>(text: &'a str, ends: &[u32], id: u32) -> &'a str {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &text[start..ends[i] as usize]
}

fn hash_piece(piece: &str) -> u64 {
    FxBuildHasher.hash_one(piece)
}

impl FastUnigram {
    /// The model of `vocab` (piece, score), `unk_id` naming the unknown piece.
    pub fn new(vocab: Vec<(String, f64)>, unk_id: Option<usize>) -> Result<Self, String> {
        let mut pieces = Pieces::default();
        for (piece, score) in &vocab {
            pieces.push(piece, *score)?;
        }
        Self::from_pieces(pieces, unk_id)
    }

    fn from_pieces(pieces: Pieces, unk_id: Option<usize>) -> Result<Self, String> {
        let Pieces { text, ends, scores } = pieces;
        let len = ends.len();
        if let Some(unk) = unk_id {
            if len == 0 {
                return Err("the vocabulary is empty but at least <unk> is needed".into());
            }
            if unk >= len {
                return Err("the `unk_id` is larger than vocabulary size".into());
            }
        }
        if len > u32::MAX as usize {
            return Err(format!("{len} pieces are more than u32 ids can name"));
        }
        let at = |i: u32| piece_of(&text, &ends, i);
        let mut ids = HashTable::with_capacity(len);
        let mut longest = 0;
        for id in 0..len as u32 {
            let piece = at(id);
            longest = longest.max(piece.len());
            let hash = hash_piece(piece);
            match ids.find_mut(hash, |&other| at(other) == piece) {
                Some(slot) => *slot = id,
                None => {
                    ids.insert_unique(hash, id, |&i| hash_piece(at(i)));
                }
            }
        }
        let min_score = scores.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(FastUnigram {
            text,
            ends,
            scores,
            ids,
            longest,
            min_score,
            unk_id,
        })
    }

    /// The piece of `id` (which must be below the vocabulary's size).
    fn piece(&self, id: u32) -> &str {
        piece_of(&self.text, &self.ends, id)
    }

    /// The pieces' count.
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Calls `found(id, length)` for each piece that is a prefix of `text`, shortest first
    /// (the order of `tokenizers`' trie walk).
    fn prefixes(&self, text: &str, mut found: impl FnMut(u32, usize)) {
        for (at, ch) in text.char_indices() {
            let end = at + ch.len_utf8();
            if end > self.longest {
                return;
            }
            if let Some(id) = self.token_to_id(&text[..end]) {
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
                let candidate = self.scores[id as usize] + here;
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
        self.ids
            .find(hash_piece(token), |&id| self.piece(id) == token)
            .copied()
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
        struct Unigram {
            unk_id: Option<usize>,
            vocab: Pieces,
        }
        use serde::de::Error;
        let raw = Box::<RawValue>::deserialize(d)?;
        let kind: Kind = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
        if kind.kind.as_deref() == Some("Unigram") && !kind.byte_fallback {
            let u: Unigram = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
            return FastUnigram::from_pieces(u.vocab, u.unk_id)
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
            TokenModel::Unigram(u) => ((id as usize) < u.len()).then(|| u.piece(id).to_string()),
            TokenModel::Other(m) => m.id_to_token(id),
        }
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        match self {
            TokenModel::Unigram(u) => u
                .ids
                .iter()
                .map(|&id| (u.piece(id).to_string(), id))
                .collect(),
            TokenModel::Other(m) => m.get_vocab(),
        }
    }

    fn get_vocab_size(&self) -> usize {
        match self {
            TokenModel::Unigram(u) => u.len(),
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
