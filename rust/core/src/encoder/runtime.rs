//! Loading ONNX Runtime from a shared library at run time (`ort`'s `load-dynamic`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;

use crate::error::{Error, Result};

/// Environment variable that names the ONNX Runtime library to load.
pub const ENV_VAR: &str = "ROUTECORE_ORT_LIB";

static ENV: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

/// Load the library at `path` once per process and return the shared environment.
///
/// ONNX Runtime allows one library and one environment per process: a later call
/// with another path returns the first environment. A missing or incompatible
/// library is an [`Error::Runtime`], never a panic.
pub fn environment(path: &Path) -> Result<Environment> {
    let mut g = ENV.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, env)) = g.as_ref() {
        return Ok(env.clone());
    }
    if !path.is_file() {
        return Err(Error::Runtime(format!(
            "no ONNX Runtime library at {} (install the onnxruntime wheel or set {ENV_VAR})",
            path.display()
        )));
    }
    let env = ort::init_from(path)
        .map_err(|e| Error::Runtime(e.to_string()))?
        .with_name("routecore")
        .build()
        .map_err(|e| Error::Runtime(e.to_string()))?;
    *g = Some((path.to_path_buf(), env.clone()));
    Ok(env)
}

/// The library path of the loaded runtime, if any.
pub fn loaded_path() -> Option<PathBuf> {
    ENV.lock().ok()?.as_ref().map(|(p, _)| p.clone())
}
