//! `config.json` of a model folder.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// How token states become one vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// First token (`[CLS]` / `<s>`).
    Cls,
    /// Mean over positions where the attention mask is 1.
    Mean,
    /// The graph already outputs one vector per text.
    None,
}

/// Which side of a sequence padding goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PaddingSide {
    /// Pad after the tokens (BERT, XLM-R).
    #[default]
    Right,
    /// Pad before the tokens.
    Left,
}

fn default_true() -> bool {
    true
}
fn default_max_length() -> usize {
    512
}

/// Parsed `config.json`. Unknown keys (source, license, notes) are ignored.
#[derive(Clone, Debug, Deserialize)]
pub struct ModelConfig {
    /// Pooling applied to the graph output.
    pub pooling: Pooling,
    /// L2-normalise the pooled vector.
    #[serde(default = "default_true")]
    pub normalize: bool,
    /// Embedding width.
    pub dim: usize,
    /// Truncation length in tokens (special tokens included).
    #[serde(default = "default_max_length")]
    pub max_length: usize,
    /// Prefix added to queries (e5: `"query: "`).
    #[serde(default)]
    pub query_prefix: String,
    /// Prefix added to passages (e5: `"passage: "`).
    #[serde(default)]
    pub passage_prefix: String,
    /// ONNX file to use, relative to the folder (takes precedence over `models`).
    #[serde(default)]
    pub onnx: Option<String>,
    /// Variants by name, e.g. `{"fp32": "model.onnx", "int8": "model-int8.onnx"}`.
    #[serde(default)]
    pub models: std::collections::BTreeMap<String, String>,
    /// Name of the graph output to read; the first output when absent.
    #[serde(default)]
    pub output: Option<String>,
    /// Padding token id (0 when absent).
    #[serde(default)]
    pub pad_token_id: Option<i64>,
    /// Rows of the position-embedding table (Hugging Face's
    /// `max_position_embeddings`); when given, `max_length` may not exceed the
    /// positions it leaves ([`ModelConfig::usable_positions`]).
    #[serde(default)]
    pub max_position_embeddings: Option<usize>,
    /// Hugging Face `model_type` (`"bert"`, `"xlm-roberta"`, ...): it says where
    /// position ids start.
    #[serde(default)]
    pub model_type: Option<String>,
    /// Padding side.
    #[serde(default)]
    pub padding_side: PaddingSide,
    /// Batch-independent embeddings. `true`: every text gets its own ONNX Runtime
    /// run (batch of one, no padding), so its embedding does not depend on the
    /// other texts of the call. `false`: one padded run per call (faster for
    /// batches). Absent: `true` exactly when the ONNX file is dynamically
    /// quantized, found at load by a byte search of the file for the op types
    /// `DynamicQuantize*`, `MatMulInteger` or `ConvInteger`. Dynamic quantization
    /// (`quantize_dynamic`'s `DynamicQuantizeLinear`) computes one activation
    /// scale per input tensor, i.e. per batch and including padding: in a batch
    /// an int8 MiniLM embedding moved to cosine 0.955 of the same text alone.
    #[serde(default)]
    pub batch_invariant: Option<bool>,
}

/// `model_type`s whose position ids start at `padding_idx + 1` (fairseq's
/// numbering, kept by RoBERTa and XLM-R: e5, bge-m3), not at 0 as in BERT.
const POSITIONS_AFTER_PADDING: [&str; 4] =
    ["roberta", "xlm-roberta", "xlm-roberta-xl", "camembert"];

impl ModelConfig {
    /// Read and check `dir/config.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::Model(format!("cannot read {}: {e}", path.display())))?;
        Self::parse(&text, &path)
    }

    /// Parse and check the text of a `config.json`; `path` is for messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let cfg: ModelConfig = serde_json::from_str(text)
            .map_err(|e| Error::Model(format!("invalid {}: {e}", path.display())))?;
        if cfg.dim == 0 || cfg.max_length < 2 {
            return Err(Error::Model(format!(
                "{}: dim must be >= 1 and max_length >= 2",
                path.display()
            )));
        }
        if let (Some(table), Some(usable)) = (cfg.max_position_embeddings, cfg.usable_positions()) {
            if cfg.max_length > usable {
                return Err(Error::MaxLengthTooLong {
                    path: path.to_path_buf(),
                    max_length: cfg.max_length,
                    max_position_embeddings: table,
                    usable,
                });
            }
        }
        Ok(cfg)
    }

    /// Token positions the model can embed, when `max_position_embeddings` is
    /// known: the whole table for BERT-style models, less the first
    /// `padding_idx + 1` rows for RoBERTa-style ones (`padding_idx` is
    /// `pad_token_id`, 1 when absent), e.g. 514 − 2 = 512 for XLM-R.
    pub fn usable_positions(&self) -> Option<usize> {
        let table = self.max_position_embeddings?;
        let after_padding = self
            .model_type
            .as_deref()
            .is_some_and(|t| POSITIONS_AFTER_PADDING.contains(&t));
        let skipped = if after_padding {
            self.pad_token_id.unwrap_or(1).max(0) as usize + 1
        } else {
            0
        };
        Some(table.saturating_sub(skipped))
    }

    /// The ONNX file to open: `variant` from `models` when given, else `onnx`, else
    /// the `int8` variant, else `fp32`, else the only `*.onnx` in the folder.
    pub fn onnx_path(&self, dir: &Path, variant: Option<&str>) -> Result<PathBuf> {
        if let Some(v) = variant {
            let f = self.models.get(v).ok_or_else(|| {
                let known: Vec<&String> = self.models.keys().collect();
                Error::Model(format!(
                    "model variant {v:?} not in config (known: {known:?})"
                ))
            })?;
            return Ok(dir.join(f));
        }
        if let Some(f) = &self.onnx {
            return Ok(dir.join(f));
        }
        for v in ["int8", "fp32"] {
            if let Some(f) = self.models.get(v) {
                return Ok(dir.join(f));
            }
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| Error::Model(format!("cannot list {}: {e}", dir.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "onnx"))
            .collect();
        found.sort();
        match found.len() {
            1 => Ok(found.pop().unwrap()),
            0 => Err(Error::Model(format!("no .onnx file in {}", dir.display()))),
            _ => Err(Error::Model(format!(
                "several .onnx files in {}; name one with \"onnx\" in config.json",
                dir.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_shared_model_configs() {
        let c: ModelConfig = serde_json::from_str(
            r#"{"pooling":"mean","normalize":true,"dim":384,"max_length":512,"query_prefix":"query: ",
                "models":{"int8":"model-int8.onnx"},"output":"last_hidden_state","pad_token_id":1,"padding_side":"right","license":"MIT"}"#,
        )
        .unwrap();
        assert_eq!(
            (c.pooling, c.dim, c.pad_token_id),
            (Pooling::Mean, 384, Some(1))
        );
        assert_eq!(
            c.onnx_path(Path::new("/m"), None).unwrap(),
            PathBuf::from("/m/model-int8.onnx")
        );
        assert!(c.onnx_path(Path::new("/m"), Some("fp16")).is_err());
        assert_eq!(c.batch_invariant, None);
        let n: ModelConfig =
            serde_json::from_str(r#"{"pooling":"none","dim":1024,"batch_invariant":false}"#)
                .unwrap();
        assert_eq!(
            (n.pooling, n.max_length, n.normalize, n.batch_invariant),
            (Pooling::None, 512, true, Some(false))
        );
        assert!(serde_json::from_str::<ModelConfig>(r#"{"pooling":"avg","dim":3}"#).is_err());
    }

    fn parse(json: &str) -> Result<ModelConfig> {
        ModelConfig::parse(json, Path::new("/m/config.json"))
    }

    #[test]
    fn max_length_must_fit_the_position_table() {
        let cfg = |max_length: usize, table: usize, model_type: &str| {
            format!(
                r#"{{"pooling":"mean","dim":384,"max_length":{max_length},"pad_token_id":1,
                    "max_position_embeddings":{table},"model_type":"{model_type}"}}"#
            )
        };
        // XLM-R (e5, bge-m3): 514 rows, ids from padding_idx + 1 = 2, so 512 usable.
        assert_eq!(
            parse(&cfg(512, 514, "xlm-roberta"))
                .unwrap()
                .usable_positions(),
            Some(512)
        );
        assert_eq!(
            parse(&cfg(8192, 8194, "xlm-roberta")).unwrap().max_length,
            8192
        );
        match parse(&cfg(513, 514, "xlm-roberta")) {
            Err(e @ Error::MaxLengthTooLong { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("513") && msg.contains("514") && msg.contains("512"),
                    "{msg}"
                );
            }
            other => panic!("expected MaxLengthTooLong, got {other:?}"),
        }
        // BERT (MiniLM): the whole table.
        assert!(parse(&cfg(512, 512, "bert")).is_ok());
        assert!(matches!(
            parse(&cfg(1024, 512, "bert")),
            Err(Error::MaxLengthTooLong {
                max_length: 1024,
                max_position_embeddings: 512,
                usable: 512,
                ..
            })
        ));
        // No table given: nothing to check against.
        let free = parse(r#"{"pooling":"mean","dim":8,"max_length":100000}"#).unwrap();
        assert_eq!(free.usable_positions(), None);
    }
}
