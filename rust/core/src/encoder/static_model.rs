//! A static embedding table (issue 38): a text's embedding is the mean of its
//! pieces' rows, L2-normalised. No transformer runs; each text is embedded on its
//! own, so an embedding never depends on the other texts of a call.
//!
//! A static model folder (written by `routecore models distill`) holds
//! `config.json` (`"kind": "static"`), the source model's `tokenizer.json`,
//! `embeddings.f16` (`rows × dim` little-endian float16) and `token_ids.u32` (the
//! tokenizer id of each row). Pieces without a row add nothing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use half::f16;
use rayon::prelude::*;
use serde::Deserialize;

use super::{load_tokenizer, model_err, Encoded, TextTokenizer};
use crate::error::{Error, Result};

/// The table of row embeddings.
pub const EMBEDDINGS_FILE: &str = "embeddings.f16";
/// Each row's tokenizer id.
pub const TOKEN_IDS_FILE: &str = "token_ids.u32";

fn default_true() -> bool {
    true
}
fn default_max_length() -> usize {
    512
}

/// `config.json` of a static model folder. Unknown keys are ignored.
#[derive(Clone, Debug, Deserialize)]
pub struct StaticConfig {
    /// Must be `"static"`.
    pub kind: String,
    /// Row width.
    pub dim: usize,
    /// Number of rows.
    pub rows: usize,
    /// Storage type of `embeddings.f16`: `"float16"`.
    #[serde(default)]
    pub dtype: Option<String>,
    /// L2-normalise the mean.
    #[serde(default = "default_true")]
    pub normalize: bool,
    /// Pieces read per text at most.
    #[serde(default = "default_max_length")]
    pub max_length: usize,
    /// The model the table was distilled from (`name:sha256-prefix`).
    #[serde(default)]
    pub source_model: Option<String>,
}

impl StaticConfig {
    /// Parse `dir/config.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| model_err(&format!("cannot read {}", path.display()), e))?;
        let cfg: StaticConfig = serde_json::from_str(&text)
            .map_err(|e| model_err(&format!("bad {}", path.display()), e))?;
        if cfg.kind != "static" {
            return Err(Error::Model(format!(
                "{}: kind {:?}, expected \"static\"",
                path.display(),
                cfg.kind
            )));
        }
        if cfg.dim == 0 || cfg.rows == 0 || cfg.max_length == 0 {
            return Err(Error::Model(format!(
                "{}: dim, rows and max_length must be positive",
                path.display()
            )));
        }
        if cfg.dtype.as_deref().is_some_and(|d| d != "float16") {
            return Err(Error::Model(format!(
                "{}: dtype {:?}, only \"float16\" is read",
                path.display(),
                cfg.dtype
            )));
        }
        Ok(cfg)
    }
}

/// A loaded static table; `encode` may be called from many threads at once.
pub struct StaticEncoder {
    dir: PathBuf,
    config: StaticConfig,
    tokenizer: TextTokenizer,
    /// `rows × dim`, widened to f32 once at load.
    table: Vec<f32>,
    /// Row of each tokenizer id, `u32::MAX` when the piece has none.
    row_of: Vec<u32>,
    truncations: AtomicU64,
}

fn read_exact_len(path: &Path, len: usize) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| model_err(&format!("cannot read {}", path.display()), e))?;
    if bytes.len() != len {
        return Err(Error::Model(format!(
            "{}: {} bytes, config.json says {len}",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes)
}

impl StaticEncoder {
    /// Open the static model folder `dir`.
    pub fn load(dir: &Path) -> Result<Self> {
        let config = StaticConfig::load(dir)?;
        let (rows, dim) = (config.rows, config.dim);
        let size = rows.checked_mul(dim).and_then(|n| n.checked_mul(2));
        let size = size.ok_or_else(|| Error::Model("rows × dim overflows".into()))?;
        let raw = read_exact_len(&dir.join(EMBEDDINGS_FILE), size)?;
        let table: Vec<f32> = raw
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect();
        if let Some(i) = table.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                what: "static embeddings",
                row: i / dim,
            });
        }
        let ids = read_exact_len(&dir.join(TOKEN_IDS_FILE), rows * 4)?;
        let tokenizer = load_tokenizer(&dir.join("tokenizer.json"), config.max_length)?;
        let vocab = tokenizer.get_vocab_size(true);
        let mut row_of = vec![u32::MAX; vocab];
        for (row, b) in ids.chunks_exact(4).enumerate() {
            let id = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
            let slot = row_of.get_mut(id).ok_or_else(|| {
                Error::Model(format!(
                    "{}: row {row} names token id {id}, past the vocabulary ({vocab})",
                    dir.join(TOKEN_IDS_FILE).display()
                ))
            })?;
            *slot = row as u32;
        }
        Ok(StaticEncoder {
            dir: dir.to_path_buf(),
            config,
            tokenizer,
            table,
            row_of,
            truncations: AtomicU64::new(0),
        })
    }

    /// The parsed `config.json`.
    pub fn config(&self) -> &StaticConfig {
        &self.config
    }
    /// Embedding width.
    pub fn dim(&self) -> usize {
        self.config.dim
    }
    /// The model folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// Texts truncated at `max_length` pieces since load.
    pub fn truncations(&self) -> u64 {
        self.truncations.load(Ordering::Relaxed)
    }

    /// Piece ids of each text (no special tokens, truncated) and whether it was cut.
    pub fn tokenize(&self, texts: &[&str]) -> Result<(Vec<Vec<u32>>, Vec<bool>)> {
        let mut ids = Vec::with_capacity(texts.len());
        let mut cut = Vec::with_capacity(texts.len());
        for t in texts {
            let e = self
                .tokenizer
                .encode_fast(*t, false)
                .map_err(|e| model_err("tokenization failed", e))?;
            ids.push(e.get_ids().to_vec());
            cut.push(!e.get_overflowing().is_empty());
        }
        Ok((ids, cut))
    }

    /// The embedding of one text's piece ids into `out` (`dim` floats): the mean of
    /// the rows of the pieces that have one, L2-normalised; zeros when none has.
    pub fn pool(&self, ids: &[u32], out: &mut [f32]) {
        let dim = self.config.dim;
        out.fill(0.0);
        let mut n = 0usize;
        for &id in ids {
            let row = self.row_of.get(id as usize).copied().unwrap_or(u32::MAX);
            if row == u32::MAX {
                continue;
            }
            let r = &self.table[row as usize * dim..(row as usize + 1) * dim];
            for (o, x) in out.iter_mut().zip(r) {
                *o += x;
            }
            n += 1;
        }
        if n == 0 {
            return;
        }
        let inv = 1.0 / n as f32;
        out.iter_mut().for_each(|o| *o *= inv);
        if self.config.normalize {
            let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                out.iter_mut().for_each(|o| *o /= norm);
            }
        }
    }

    /// Embed `texts`: `n × dim` floats, each text on its own (so an embedding never depends
    /// on its batch). From [`PARALLEL_TEXTS`] texts the texts are split across the rayon
    /// pool; the timers then add up every text's time (CPU time, not wall time).
    pub fn encode(&self, texts: &[&str]) -> Result<Encoded> {
        let dim = self.config.dim;
        let mut data = vec![0f32; texts.len() * dim];
        // (truncated, tokenize ns, pool ns) of one text, its embedding written into `row`.
        let one = |t: &str, row: &mut [f32]| -> Result<(bool, u64, u64)> {
            let t0 = Instant::now();
            let e = self
                .tokenizer
                .encode_fast(t, false) // no offsets: they are not used
                .map_err(|e| model_err("tokenization failed", e))?;
            let t1 = Instant::now();
            self.pool(e.get_ids(), row);
            let (tok, pool) = ((t1 - t0).as_nanos() as u64, t1.elapsed().as_nanos() as u64);
            Ok((!e.get_overflowing().is_empty(), tok, pool))
        };
        let each: Vec<(bool, u64, u64)> =
            if texts.len() >= PARALLEL_TEXTS && rayon::current_num_threads() > 1 {
                data.par_chunks_mut(dim)
                    .zip(texts.par_iter())
                    .map(|(row, t)| one(t, row))
                    .collect::<Result<_>>()?
            } else {
                data.chunks_mut(dim)
                    .zip(texts)
                    .map(|(row, t)| one(t, row))
                    .collect::<Result<_>>()?
            };
        let out = Encoded {
            data,
            n: texts.len(),
            dim,
            truncated: (0..each.len()).filter(|&i| each[i].0).collect(),
            tokenize_ns: each.iter().map(|e| e.1).sum(),
            infer_ns: each.iter().map(|e| e.2).sum(),
            ..Default::default()
        };
        self.truncations
            .fetch_add(out.truncated.len() as u64, Ordering::Relaxed);
        Ok(out)
    }
}

/// Texts from which [`StaticEncoder::encode`] splits a batch across threads: a text takes
/// 15–40 µs, so a batch this large amortises the fork (a few µs) many times over.
pub const PARALLEL_TEXTS: usize = 64;

#[cfg(test)]
#[path = "static_model_tests.rs"]
mod tests;

/// Microseconds per text, one text a call, on one thread (issue 38's goal: 30 µs):
/// `STATIC_DIR=<table> TEXTS=<one text a line> cargo test --release --lib
/// static_model::timing -- --ignored --nocapture`.
#[cfg(test)]
mod timing {
    use super::*;

    #[test]
    #[ignore]
    fn tokenizer_paths() {
        let (Some(dir), Some(texts)) = (std::env::var_os("STATIC_DIR"), std::env::var_os("TEXTS"))
        else {
            eprintln!("skipping: set STATIC_DIR and TEXTS");
            return;
        };
        let enc = StaticEncoder::load(Path::new(&dir)).unwrap();
        let texts: Vec<String> = std::fs::read_to_string(texts)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        for round in 0..3 {
            let t = Instant::now();
            for q in &texts {
                std::hint::black_box(enc.tokenizer.encode(q.as_str(), false).unwrap());
            }
            let a = t.elapsed().as_nanos() as f64 / texts.len() as f64 / 1e3;
            let t = Instant::now();
            for q in &texts {
                std::hint::black_box(enc.tokenizer.encode_fast(q.as_str(), false).unwrap());
            }
            let b = t.elapsed().as_nanos() as f64 / texts.len() as f64 / 1e3;
            let t = Instant::now();
            for q in &texts {
                std::hint::black_box(enc.encode(&[q.as_str()]).unwrap());
            }
            let c = t.elapsed().as_nanos() as f64 / texts.len() as f64 / 1e3;
            eprintln!("round {round}: encode {a:.1} us, encode_fast {b:.1} us, full {c:.1} us");
        }
    }
}
