//! Loading ONNX Runtime from a shared library at run time (`ort`'s `load-dynamic`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;

use crate::error::{Error, Result};

/// Environment variable that names the ONNX Runtime library to load.
pub const ENV_VAR: &str = "ROUTECORE_ORT_LIB";

/// ONNX Runtime's own switch for its telemetry provider. Without it, the PyPI
/// build writes `~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}`
/// on every load (unless `CI` is set) and queues events for upload; disabling
/// telemetry *events* on the environment alone does not stop that.
pub const TELEMETRY_VAR: &str = "ORT_DISABLE_TELEMETRY";

static ENV: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

/// Load the library at `path` once per process and return the shared environment.
///
/// ONNX Runtime allows one library and one environment per process: a later call
/// with another path returns the first environment. A missing or incompatible
/// library is an [`Error::Runtime`], never a panic.
///
/// Telemetry is off: [`TELEMETRY_VAR`] is set to `1` before the library loads
/// (unless the caller set it) and the environment is built with telemetry events
/// disabled, so loading a model writes no file and opens no connection.
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
    if std::env::var_os(TELEMETRY_VAR).is_none() {
        // Before the library is loaded, under the lock: no other thread of ours reads the environment here.
        std::env::set_var(TELEMETRY_VAR, "1");
    }
    let env = ort::init_from(path)
        .map_err(|e| Error::Runtime(e.to_string()))?
        .with_name("routecore")
        .with_telemetry(false)
        .build()
        .map_err(|e| Error::Runtime(e.to_string()))?;
    *g = Some((path.to_path_buf(), env.clone()));
    Ok(env)
}

/// The library path of the loaded runtime, if any.
pub fn loaded_path() -> Option<PathBuf> {
    ENV.lock().ok()?.as_ref().map(|(p, _)| p.clone())
}
