//! The one error type of the core crate.

use std::path::PathBuf;

/// Every failure the core can report. The Python binding maps each variant to
/// its own exception class under `routecore.RoutecoreError`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A vector or matrix has the wrong width.
    #[error("dimension mismatch: expected {expected}, got {got}")]
    DimensionMismatch {
        /// Width the index or model expects.
        expected: usize,
        /// Width that was given.
        got: usize,
    },
    /// A search or scoring call on an index that holds no entries.
    #[error("the index is empty")]
    EmptyIndex,
    /// `k` is zero or larger than the number of entries.
    #[error("bad k: k={k} must be between 1 and the number of entries ({n})")]
    BadK {
        /// The requested k.
        k: usize,
        /// Number of entries.
        n: usize,
    },
    /// An id that is not in the index (update/remove).
    #[error("unknown id: {0}")]
    UnknownId(u64),
    /// An id given twice, or one that is already in the index (add).
    #[error("duplicate id: {0}")]
    DuplicateId(u64),
    /// NaN or infinity in input vectors.
    #[error("non-finite value (NaN or inf) in {what} at row {row}")]
    NonFinite {
        /// Which input (vectors, queries, ...).
        what: &'static str,
        /// First offending row.
        row: usize,
    },
    /// A parameter outside its domain (temperature <= 0, mismatched lengths, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// An index file that is truncated, tampered with or of another format.
    #[error("corrupt index file {path}: {reason}")]
    CorruptIndex {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A model folder, config, ONNX graph or tokenizer that cannot be used.
    #[error("model error: {0}")]
    Model(String),
    /// A model's `max_length` beyond the positions its embedding table holds.
    #[error(
        "model error: {path}: max_length {max_length} exceeds the {usable} token positions \
         of the model (max_position_embeddings {max_position_embeddings})"
    )]
    MaxLengthTooLong {
        /// The `config.json`.
        path: PathBuf,
        /// The configured truncation length.
        max_length: usize,
        /// Rows of the position-embedding table.
        max_position_embeddings: usize,
        /// Positions usable by tokens (fewer than the rows for RoBERTa-style models).
        usable: usize,
    },
    /// The ONNX Runtime library could not be loaded or initialised.
    #[error("onnxruntime unavailable: {0}")]
    Runtime(String),
    /// Operating-system I/O failure.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Result alias used across the core.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wrap an `std::io::Error` with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
