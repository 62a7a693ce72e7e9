//! Whether `tokenizer.json` belongs to the ONNX model beside it (issue 36 §1): a structurally
//! valid tokenizer of another model used to load, then misroute or fail on the first query
//! holding a large id.

use tokenizers::Model;

use super::Encoder;
use crate::error::{Error, Result};

impl Encoder {
    /// Refuse a tokenizer that does not fit the model:
    /// - `config.json`'s `pad_token_id` must be one of the tokenizer's special tokens (a BERT
    ///   tokenizer's id 1 is `[unused0]`, an XLM-R one's `<pad>`);
    /// - the model must embed the tokenizer's largest id: one inference of
    ///   `[largest id]` at load (a 250k-piece tokenizer in front of a 30k-row table failed on
    ///   the first query that held a large id).
    pub(super) fn check_tokenizer_fits(&self) -> Result<()> {
        let tok = &self.tokenizer;
        let file = self.dir.join("tokenizer.json");
        if let Some(pad) = self.config.pad_token_id {
            let special = u32::try_from(pad)
                .ok()
                .and_then(|id| tok.get_added_tokens_decoder().get(&id).cloned())
                .is_some_and(|t| t.special);
            if !special {
                let piece = u32::try_from(pad)
                    .ok()
                    .and_then(|id| tok.id_to_token(id))
                    .map_or_else(|| "no token".to_string(), |p| format!("{p:?}"));
                return Err(Error::Model(format!(
                    "{}: config.json's pad_token_id {pad} is not a special token of the tokenizer \
                     (it is {piece}): the tokenizer is not this model's",
                    file.display()
                )));
            }
        }
        // Not `get_vocab_size(true)`: it builds the whole vocabulary map (0.1 s for e5's 250k pieces).
        let added = tok
            .get_added_tokens_decoder()
            .keys()
            .max()
            .map_or(0, |&id| id as usize + 1);
        let size = tok.get_model().get_vocab_size().max(added);
        let Some(largest) = size.checked_sub(1) else {
            return Err(Error::Model(format!(
                "{}: the tokenizer has no vocabulary",
                file.display()
            )));
        };
        self.runner
            .run(&self.config, &[vec![largest as u32]])
            .map(|_| ())
            .map_err(|e| {
                Error::Model(format!(
                    "{}: the tokenizer has {size} ids but {} cannot embed id {largest}: the \
                     tokenizer is not this model's ({e})",
                    file.display(),
                    self.onnx_path.display()
                ))
            })
    }
}
