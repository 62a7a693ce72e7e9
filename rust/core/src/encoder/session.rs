//! The ONNX Runtime session and how token ids go through it: one padded run per
//! call, or one run per text so that an embedding does not depend on its batch.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use ort::session::{Session, SessionInputValue};
use ort::value::TensorRef;
use parking_lot::Mutex;

use super::config::{ModelConfig, PaddingSide};
use super::pooling;
use crate::error::{Error, Result};

/// Op types whose activation quantization parameters are computed at run time
/// over the whole input tensor (`DynamicQuantizeLinear`, `DynamicQuantizeMatMul`,
/// `DynamicQuantizeLSTM`), or integer ops that `quantize_dynamic` pairs with them.
const DYNAMIC_QUANT_OPS: [&[u8]; 3] = [b"DynamicQuantize", b"MatMulInteger", b"ConvInteger"];

/// Whether the ONNX file at `path` is dynamically quantized: a byte search of the
/// file for the op-type strings of [`DYNAMIC_QUANT_OPS`] (node op types are stored
/// as plain strings in the protobuf). Reads in 4 MiB chunks and stops at a hit.
pub(super) fn dynamically_quantized(path: &Path) -> Result<bool> {
    let err = |e: std::io::Error| Error::Model(format!("cannot read {}: {e}", path.display()));
    let mut f = std::fs::File::open(path).map_err(err)?;
    let keep = DYNAMIC_QUANT_OPS.iter().map(|p| p.len()).max().unwrap_or(0) - 1;
    let mut buf = vec![0u8; 4 << 20];
    let mut have = 0;
    loop {
        let n = f.read(&mut buf[have..]).map_err(err)?;
        let len = have + n;
        let hay = &buf[..len];
        if DYNAMIC_QUANT_OPS
            .iter()
            .any(|p| hay.windows(p.len()).any(|w| w == *p))
        {
            return Ok(true);
        }
        if n == 0 {
            return Ok(false);
        }
        // Keep the tail so that a name cut by the chunk boundary is still found.
        let tail = len.saturating_sub(keep);
        buf.copy_within(tail..len, 0);
        have = len - tail;
    }
}

/// A graph input and what feeds it.
#[derive(Clone, Copy)]
enum Feed {
    Ids,
    Mask,
    Zeros,
}

/// The session and the input buffers reused from run to run.
struct Slot {
    session: Session,
    ids: Vec<i64>,
    mask: Vec<i64>,
    zeros: Vec<i64>,
}

impl Slot {
    fn new(session: Session) -> Self {
        Slot {
            session,
            ids: Vec::new(),
            mask: Vec::new(),
            zeros: Vec::new(),
        }
    }
}

/// The nice value of a background run's thread (Linux; elsewhere it runs at normal priority).
/// Beside a thread of nice 0 that wants the same core, such a thread gets about a tenth of it
/// (scheduler weights 110 against 1024); a core nobody else wants, it gets whole.
const BACKGROUND_NICE: i32 = 10;

/// Lower the calling thread's priority to [`BACKGROUND_NICE`] (no effect off Linux).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority with `who` 0 changes the calling thread only (Linux), which ends with
    // the background run; a failure leaves it at normal priority.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
    }
}

/// Opens another session on the same file with the given intra-op threads.
pub(super) type SessionFactory = Box<dyn Fn(usize) -> Result<Session> + Send + Sync>;

/// Runs token ids through the session and pools them into embeddings. Runs of a
/// session are serialised by its mutex (each uses the intra-op thread pool).
///
/// Per-text mode: one text runs on the main session; several texts of one call
/// are spread over `threads` sessions of one intra-op thread each, built on the
/// first such call (small runs use one core badly: on 2 cores two 1-thread
/// sessions embedded ~2.1x more short texts/s than one 2-thread session).
/// Background runs ([`Runner::run_background`]) use the first worker alone.
pub(super) struct Runner {
    slot: Mutex<Slot>,
    feeds: Vec<(String, Feed)>,
    output: String,
    per_text: bool,
    threads: usize,
    /// One slot per worker session, each opened on first use.
    workers: Vec<OnceLock<Mutex<Slot>>>,
    factory: SessionFactory,
}

impl Runner {
    /// Wrap `session` (inputs already checked); `per_text` selects one run per text,
    /// `threads` the number of worker sessions `factory` opens for batches.
    pub(super) fn new(
        session: Session,
        output: String,
        per_text: bool,
        threads: usize,
        factory: SessionFactory,
    ) -> Self {
        let feeds = session
            .inputs()
            .iter()
            .map(|i| {
                let feed = match i.name() {
                    "input_ids" => Feed::Ids,
                    "attention_mask" => Feed::Mask,
                    _ => Feed::Zeros,
                };
                (i.name().to_string(), feed)
            })
            .collect();
        Runner {
            slot: Mutex::new(Slot::new(session)),
            feeds,
            output,
            per_text,
            threads,
            // One 1-thread session per core at most: more only add memory (~100 MB each for e5).
            workers: (0..threads.min(num_cpus::get()).max(1))
                .map(|_| OnceLock::new())
                .collect(),
            factory,
        }
    }

    /// The 1-thread worker session `i`, opened on first use.
    fn worker(&self, i: usize) -> Result<&Mutex<Slot>> {
        let cell = &self.workers[i];
        if let Some(w) = cell.get() {
            return Ok(w);
        }
        let made = Mutex::new(Slot::new((self.factory)(1)?));
        // Another thread may have won the race; its session is kept, ours dropped.
        let _ = cell.set(made);
        Ok(cell.get().expect("set above"))
    }

    /// The first `n` 1-thread worker sessions (at most all of them), opened on first use.
    fn workers(&self, n: usize) -> Result<Vec<&Mutex<Slot>>> {
        (0..self.workers.len().min(n))
            .map(|i| self.worker(i))
            .collect()
    }

    /// [`Runner::run`] as background work: on the first worker session (1 thread), on a thread
    /// of lower priority ([`BACKGROUND_NICE`] on Linux) that this one waits for, so that the run
    /// takes a core the calls being served leave idle rather than one they want. An encoder of
    /// one thread runs it on its session, on this thread (a niced run there could hold up the
    /// foreground runs queued behind it).
    pub(super) fn run_background(
        &self,
        config: &ModelConfig,
        ids: &[Vec<u32>],
    ) -> Result<Vec<f32>> {
        let run = |slot: &Mutex<Slot>| -> Result<Vec<f32>> {
            if !self.per_text {
                return self.run_rows(slot, config, ids);
            }
            let mut out = Vec::with_capacity(ids.len() * config.dim);
            for row in ids {
                out.extend(self.run_rows(slot, config, std::slice::from_ref(row))?);
            }
            Ok(out)
        };
        if self.threads < 2 {
            return run(&self.slot);
        }
        let slot = self.worker(0)?;
        std::thread::scope(|sc| {
            sc.spawn(|| {
                lower_priority();
                run(slot)
            })
            .join()
            .unwrap_or_else(|_| Err(Error::Model("the background encode panicked".into())))
        })
    }

    /// Whether each text gets its own run.
    pub(super) fn per_text(&self) -> bool {
        self.per_text
    }

    /// Embed `ids` (one row per text); returns `len(ids) × dim` floats.
    pub(super) fn run(&self, config: &ModelConfig, ids: &[Vec<u32>]) -> Result<Vec<f32>> {
        if !self.per_text {
            return self.run_rows(&self.slot, config, ids);
        }
        // One text per run, no padding: the tensor holds nothing but this text.
        if ids.len() < 2 || self.threads < 2 {
            let mut out = Vec::with_capacity(ids.len() * config.dim);
            for row in ids {
                out.extend(self.run_rows(&self.slot, config, std::slice::from_ref(row))?);
            }
            return Ok(out);
        }
        let workers = self.workers(ids.len())?;
        let d = config.dim;
        let next = AtomicUsize::new(0);
        let parts = std::thread::scope(|sc| {
            let handles: Vec<_> = workers
                .iter()
                .map(|&slot| {
                    let next = &next;
                    sc.spawn(move || -> Result<Vec<(usize, Vec<f32>)>> {
                        let mut got = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(row) = ids.get(i) else {
                                return Ok(got);
                            };
                            got.push((i, self.run_rows(slot, config, std::slice::from_ref(row))?));
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("encoder worker panicked"))
                .collect::<Vec<_>>()
        });
        let mut out = vec![0f32; ids.len() * d];
        for part in parts {
            for (i, v) in part? {
                out[i * d..(i + 1) * d].copy_from_slice(&v);
            }
        }
        Ok(out)
    }

    /// One ORT run on `slot` over `ids` padded to the longest row.
    fn run_rows(
        &self,
        slot: &Mutex<Slot>,
        config: &ModelConfig,
        ids: &[Vec<u32>],
    ) -> Result<Vec<f32>> {
        let b = ids.len();
        let s = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let pad = config.pad_token_id.unwrap_or(0);
        let left = config.padding_side == PaddingSide::Left;
        let mut guard = slot.lock();
        let Slot {
            session,
            ids: id_buf,
            mask,
            zeros,
        } = &mut *guard;
        id_buf.clear();
        id_buf.resize(b * s, pad);
        mask.clear();
        mask.resize(b * s, 0);
        zeros.resize(b * s, 0);
        for (r, row) in ids.iter().enumerate() {
            let off = r * s + if left { s - row.len() } else { 0 };
            for (c, &t) in row.iter().enumerate() {
                id_buf[off + c] = t as i64;
                mask[off + c] = 1;
            }
        }
        let shape = [b, s];
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> =
            Vec::with_capacity(self.feeds.len());
        for (name, feed) in &self.feeds {
            let data: &[i64] = match feed {
                Feed::Ids => id_buf,
                Feed::Mask => mask,
                Feed::Zeros => &zeros[..b * s],
            };
            let t = TensorRef::from_array_view((shape, data))
                .map_err(|e| Error::Model(format!("input tensor: {e}")))?;
            inputs.push((Cow::Borrowed(name.as_str()), t.into()));
        }
        let outputs = session
            .run(inputs)
            .map_err(|e| Error::Model(format!("inference failed: {e}")))?;
        let value = outputs
            .get(&self.output)
            .ok_or_else(|| Error::Model(format!("graph produced no output {:?}", self.output)))?;
        let (oshape, data) = value
            .try_extract_tensor::<f32>()
            .map_err(|e| Error::Model(format!("output is not float32: {e}")))?;
        pooling::pool(config, &self.output, oshape, data, mask, b, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_op_types_across_chunk_boundaries() {
        let dir = std::env::temp_dir().join(format!("rc-dq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("m.onnx");
        let mut bytes = vec![7u8; (4 << 20) - 5];
        std::fs::write(&f, &bytes).unwrap();
        assert!(!dynamically_quantized(&f).unwrap());
        bytes.extend_from_slice(b"MatMulInteger");
        bytes.extend(vec![7u8; 100]);
        std::fs::write(&f, &bytes).unwrap();
        assert!(dynamically_quantized(&f).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(dynamically_quantized(&dir.join("none.onnx")).is_err());
    }
}
