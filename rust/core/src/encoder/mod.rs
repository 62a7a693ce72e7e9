//! Text encoder: `tokenizers` for tokens, ONNX Runtime (through `ort`) for the
//! transformer, pooling and normalisation in Rust, an LRU cache in front.

pub mod cache;
pub mod config;
mod fit_check;
mod pooling;
pub mod runtime;
mod session;
pub mod static_model;
pub mod unigram;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ort::logging::LogLevel;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::TensorElementType;
use tokenizers::TruncationParams;

pub use cache::{CacheStats, EmbeddingCache};
pub use config::{ModelConfig, PaddingSide, Pooling};
use session::Runner;
pub use static_model::{StaticConfig, StaticEncoder};
pub use unigram::TextTokenizer;

use crate::error::{Error, Result};

/// Batches up to this size are tokenized on the calling thread.
const SEQUENTIAL_TOKENIZE: usize = 8;

/// Whether a text is a query or a passage (selects the prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKind {
    /// A user query (`query_prefix`).
    Query = 0,
    /// A document or exemplar stored for retrieval (`passage_prefix`).
    Passage = 1,
}

impl TextKind {
    /// Parse `"query"` or `"passage"`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "query" => Ok(TextKind::Query),
            "passage" => Ok(TextKind::Passage),
            o => Err(Error::InvalidArgument(format!(
                "kind must be 'query' or 'passage', got {o:?}"
            ))),
        }
    }
}

/// How to open a model folder.
#[derive(Clone, Debug)]
pub struct EncoderOptions {
    /// Path of `libonnxruntime.so.*`.
    pub runtime_path: PathBuf,
    /// Variant name from `config.json`'s `models` (e.g. `"int8"`, `"fp32"`).
    pub variant: Option<String>,
    /// Intra-op threads; physical cores when `None`.
    pub intra_threads: Option<usize>,
    /// Query-cache capacity (0 disables the cache).
    pub cache_size: usize,
    /// Let ONNX Runtime's intra-op threads spin after a run (lower latency for
    /// back-to-back runs, but they then compete with other work on small machines).
    pub spinning: bool,
}

/// Embeddings of a batch plus what it cost.
#[derive(Clone, Debug, Default)]
pub struct Encoded {
    /// `n × dim`, row-major.
    pub data: Vec<f32>,
    /// Number of texts.
    pub n: usize,
    /// Embedding width.
    pub dim: usize,
    /// Positions (in the batch) of texts cut at `max_length`.
    pub truncated: Vec<usize>,
    /// Texts answered from the cache.
    pub cache_hits: usize,
    /// Time spent tokenizing (ns).
    pub tokenize_ns: u64,
    /// Time spent in ONNX Runtime and pooling (ns).
    pub infer_ns: u64,
}

/// The most intra-op threads an encoder accepts.
pub const MAX_THREADS: usize = 1024;

/// A loaded model. `encode` may be called from many threads; runs of the ONNX
/// session are serialised by a mutex and each uses the intra-op thread pool.
///
/// Dynamically quantized models (see [`ModelConfig::batch_invariant`]) run each
/// text on its own, unpadded, so an embedding does not depend on the other texts
/// of the call; other models run one padded batch per call.
pub struct Encoder {
    dir: PathBuf,
    onnx_path: PathBuf,
    config: ModelConfig,
    tokenizer: TextTokenizer,
    runner: Runner,
    threads: usize,
    cache: EmbeddingCache,
    truncations: AtomicU64,
    onnx_sha256: String,
}

pub(crate) fn model_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Model(format!("{what}: {e}"))
}

/// The SHA-256 of the file at `path`, lower-case hex.
pub fn file_sha256(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let cannot = |e: std::io::Error| model_err(&format!("cannot read {}", path.display()), e);
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let (mut hasher, mut buf) = (Sha256::new(), vec![0u8; 1 << 20]);
    loop {
        let n = file.read(&mut buf).map_err(cannot)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `tokenizer.json` at `path`, truncating at `max_length` and never padding.
pub(crate) fn load_tokenizer(path: &Path, max_length: usize) -> Result<TextTokenizer> {
    let cannot =
        |e: &dyn std::fmt::Display| model_err(&format!("cannot load {}", path.display()), e);
    let text = std::fs::read_to_string(path).map_err(|e| cannot(&e))?;
    let mut tokenizer: TextTokenizer = serde_json::from_str(&text).map_err(|e| cannot(&e))?;
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length,
            ..Default::default()
        }))
        .map_err(|e| model_err("tokenizer truncation", e))?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

impl Encoder {
    /// Open the model folder `dir` (ONNX file, `tokenizer.json`, `config.json`).
    pub fn load(dir: &Path, opts: &EncoderOptions) -> Result<Self> {
        let config = ModelConfig::load(dir)?;
        let onnx_path = config.onnx_path(dir, opts.variant.as_deref())?;
        if !onnx_path.is_file() {
            return Err(Error::Model(format!(
                "ONNX file not found: {}",
                onnx_path.display()
            )));
        }
        let env = runtime::environment(&opts.runtime_path)?;
        let threads = opts
            .intra_threads
            .unwrap_or_else(num_cpus::get_physical)
            .max(1);
        if threads > MAX_THREADS {
            // ONNX Runtime crashed at 10^6 threads and hung at 30,000.
            return Err(Error::InvalidArgument(format!(
                "threads must be at most {MAX_THREADS}, got {threads}"
            )));
        }
        let (path, spinning) = (onnx_path.clone(), opts.spinning);
        let factory: session::SessionFactory = Box::new(move |threads| {
            Session::builder(&env)
                .and_then(|b| Ok(b.with_optimization_level(GraphOptimizationLevel::All)?))
                .and_then(|b| Ok(b.with_intra_threads(threads)?))
                .and_then(|b| Ok(b.with_inter_threads(1)?))
                .and_then(|b| Ok(b.with_intra_op_spinning(spinning)?))
                // A failed run comes back as our typed error: ONNX Runtime must not also print it.
                .and_then(|b| Ok(b.with_log_level(LogLevel::Fatal)?))
                .and_then(|mut b| b.commit_from_file(&path))
                .map_err(|e| model_err(&format!("cannot load ONNX model {}", path.display()), e))
        });
        // The tokenizer (e5's is a 9 MB JSON vocabulary: 0.06 s with unigram::FastUnigram)
        // parses, and the ONNX file is hashed (the model id: 0.07 s for e5's 77 MB), each on
        // its own thread while ONNX Runtime builds the session (about 0.25 s).
        let tok_path = dir.join("tokenizer.json");
        let (tokenizer, session, digest) = std::thread::scope(|s| {
            let tok = s.spawn(|| load_tokenizer(&tok_path, config.max_length));
            let hash = s.spawn(|| file_sha256(&onnx_path));
            let session = factory(threads);
            let panicked = |what: &str| Error::Model(format!("the {what} panicked"));
            let tokenizer = tok
                .join()
                .unwrap_or_else(|_| Err(panicked("tokenizer loader")));
            let digest = hash.join().unwrap_or_else(|_| Err(panicked("model hash")));
            (tokenizer, session, digest)
        });
        let (tokenizer, session, onnx_sha256) = (tokenizer?, session?, digest?);
        let output = Self::check_graph(&session, &config, &onnx_path)?;
        let per_text = match config.batch_invariant {
            Some(forced) => forced,
            None => session::dynamically_quantized(&onnx_path)?,
        };
        let encoder = Encoder {
            dir: dir.to_path_buf(),
            onnx_path,
            config,
            tokenizer,
            runner: Runner::new(session, output, per_text, threads, factory),
            threads,
            cache: EmbeddingCache::new(opts.cache_size),
            truncations: AtomicU64::new(0),
            onnx_sha256,
        };
        encoder.check_tokenizer_fits()?;
        Ok(encoder)
    }

    /// Check inputs and the output against the config; returns the output name.
    fn check_graph(s: &Session, cfg: &ModelConfig, path: &Path) -> Result<String> {
        let names: Vec<&str> = s.inputs().iter().map(|i| i.name()).collect();
        for i in s.inputs() {
            if !matches!(i.name(), "input_ids" | "attention_mask" | "token_type_ids") {
                return Err(Error::Model(format!(
                    "{}: unsupported graph input {:?} (inputs: {names:?})",
                    path.display(),
                    i.name()
                )));
            }
            if i.dtype().tensor_type() != Some(TensorElementType::Int64) {
                return Err(Error::Model(format!(
                    "{}: input {:?} must be int64",
                    path.display(),
                    i.name()
                )));
            }
        }
        if !names.contains(&"input_ids") {
            return Err(Error::Model(format!(
                "{}: graph has no input_ids input (inputs: {names:?})",
                path.display()
            )));
        }
        let outs: Vec<&str> = s.outputs().iter().map(|o| o.name()).collect();
        let out = match &cfg.output {
            Some(o) => s.outputs().iter().find(|x| x.name() == o).ok_or_else(|| {
                Error::Model(format!(
                    "{}: config output {o:?} is not a graph output (outputs: {outs:?})",
                    path.display()
                ))
            })?,
            None => s
                .outputs()
                .first()
                .ok_or_else(|| Error::Model("graph has no output".into()))?,
        };
        if let Some(shape) = out.dtype().tensor_shape() {
            let want = if cfg.pooling == Pooling::None { 2 } else { 3 };
            if shape.len() != want {
                return Err(Error::Model(format!(
                    "{}: output {:?} has rank {} but pooling {:?} needs rank {want}",
                    path.display(),
                    out.name(),
                    shape.len(),
                    cfg.pooling
                )));
            }
            let last = *shape.last().unwrap();
            if last > 0 && last as usize != cfg.dim {
                return Err(Error::Model(format!(
                    "{}: output width {last} but config dim {}",
                    path.display(),
                    cfg.dim
                )));
            }
        }
        Ok(out.name().to_string())
    }

    /// The parsed `config.json`.
    pub fn config(&self) -> &ModelConfig {
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
    /// The ONNX file in use.
    pub fn onnx_path(&self) -> &Path {
        &self.onnx_path
    }
    /// The SHA-256 of the ONNX file as loaded (lower-case hex), read once at load.
    pub fn onnx_sha256(&self) -> &str {
        &self.onnx_sha256
    }
    /// Whether each text runs on its own (batch-independent embeddings): from
    /// `batch_invariant` in `config.json`, else detected dynamic quantization.
    pub fn per_text_runs(&self) -> bool {
        self.runner.per_text()
    }
    /// Intra-op threads of the session.
    pub fn threads(&self) -> usize {
        self.threads
    }
    /// Texts truncated since load.
    pub fn truncations(&self) -> u64 {
        self.truncations.load(Ordering::Relaxed)
    }
    /// Cache counters.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }
    /// Empty the cache.
    pub fn clear_cache(&self) {
        self.cache.clear()
    }

    fn prefixed<'t>(&self, text: &'t str, kind: TextKind) -> Cow<'t, str> {
        let p = match kind {
            TextKind::Query => &self.config.query_prefix,
            TextKind::Passage => &self.config.passage_prefix,
        };
        if p.is_empty() {
            Cow::Borrowed(text)
        } else {
            Cow::Owned(format!("{p}{text}"))
        }
    }

    /// Token ids (special tokens included, truncated) and whether each text was cut.
    pub fn tokenize(&self, texts: &[&str], kind: TextKind) -> Result<(Vec<Vec<u32>>, Vec<bool>)> {
        let enc = if texts.len() <= SEQUENTIAL_TOKENIZE {
            // A few texts: tokenize on this thread. encode_batch would wake the rayon
            // pool, whose spinning workers then compete with ONNX Runtime's threads.
            texts
                .iter()
                .map(|t| self.tokenizer.encode(self.prefixed(t, kind), true))
                .collect::<std::result::Result<Vec<_>, _>>()
        } else {
            let inputs: Vec<String> = texts
                .iter()
                .map(|t| self.prefixed(t, kind).into_owned())
                .collect();
            self.tokenizer.encode_batch(inputs, true)
        }
        .map_err(|e| model_err("tokenization failed", e))?;
        Ok(enc
            .iter()
            .map(|e| (e.get_ids().to_vec(), !e.get_overflowing().is_empty()))
            .unzip())
    }

    /// `texts`' embeddings when every one is cached (no model run), else None (nothing counted).
    /// A lookup costs microseconds: a caller may make it without letting other threads in.
    pub fn encode_cached(&self, texts: &[&str], kind: TextKind) -> Option<Encoded> {
        let dim = self.config.dim;
        let vecs = self.cache.get_all(kind as u8, texts)?;
        let mut data = Vec::with_capacity(texts.len() * dim);
        for v in &vecs {
            data.extend_from_slice(v);
        }
        Some(Encoded {
            data,
            n: texts.len(),
            dim,
            cache_hits: texts.len(),
            ..Default::default()
        })
    }

    /// Embed `texts`; returns `n × dim` floats. Cached texts skip the model.
    pub fn encode(&self, texts: &[&str], kind: TextKind) -> Result<Encoded> {
        self.encode_on(texts, kind, false)
    }

    /// [`Encoder::encode`] for background work (a lesson being recorded): the texts the cache
    /// misses run on a 1-thread session (opened on first use, ~130 MB for e5; the first of the
    /// batch workers), on a thread of lower priority, so that the call takes a core the foreground
    /// calls leave idle, not every core they want, and does not queue behind them
    /// (`BACKGROUND_NICE` in `session.rs`). An encoder of one thread runs them on its session.
    pub fn encode_background(&self, texts: &[&str], kind: TextKind) -> Result<Encoded> {
        self.encode_on(texts, kind, true)
    }

    fn encode_on(&self, texts: &[&str], kind: TextKind, background: bool) -> Result<Encoded> {
        let dim = self.config.dim;
        let mut out = Encoded {
            data: vec![0f32; texts.len() * dim],
            n: texts.len(),
            dim,
            ..Default::default()
        };
        let mut todo: Vec<usize> = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            match self.cache.get(kind as u8, t) {
                Some(v) => {
                    out.data[i * dim..(i + 1) * dim].copy_from_slice(&v);
                    out.cache_hits += 1;
                }
                None => todo.push(i),
            }
        }
        if todo.is_empty() {
            return Ok(out);
        }
        let t0 = Instant::now();
        let batch: Vec<&str> = todo.iter().map(|&i| texts[i]).collect();
        let (ids, cut) = self.tokenize(&batch, kind)?;
        out.tokenize_ns = t0.elapsed().as_nanos() as u64;
        for (j, &c) in cut.iter().enumerate() {
            if c {
                out.truncated.push(todo[j]);
            }
        }
        self.truncations
            .fetch_add(out.truncated.len() as u64, Ordering::Relaxed);
        let t1 = Instant::now();
        let vecs = if background {
            self.runner.run_background(&self.config, &ids)?
        } else {
            self.runner.run(&self.config, &ids)?
        };
        out.infer_ns = t1.elapsed().as_nanos() as u64;
        for (j, &i) in todo.iter().enumerate() {
            let v = &vecs[j * dim..(j + 1) * dim];
            out.data[i * dim..(i + 1) * dim].copy_from_slice(v);
            self.cache.put(kind as u8, texts[i], Arc::from(v));
        }
        Ok(out)
    }
}
