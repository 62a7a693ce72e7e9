//! Atomic replacement of a file: the bytes go to a new temporary file in the
//! target's folder, which is synced, renamed over the target, and the folder
//! synced in turn. A crash leaves the old file or the new one, never half of one.
//!
//! The temporary name is random and the file is created exclusively (`O_EXCL`,
//! and `O_NOFOLLOW` on unix), so concurrent saves (threads or processes) never
//! share one, and a symlink planted at the temporary name is never written
//! through: the create fails and another name is drawn. The rename replaces a
//! symlink standing at the target itself, without writing to what it points at.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names drawn before giving up when every one is taken.
const ATTEMPTS: usize = 64;

/// A name no other call of this process draws, and that another process or
/// user cannot predict: a counter and the clock hashed with per-process random
/// keys (std's `RandomState`, seeded from the OS).
fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    format!(".routecore-{:016x}.tmp", h.finish())
}

/// Create a new file under a fresh random name in `dir`: `(path, file)`.
fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    create_first_free(dir, (0..ATTEMPTS).map(|_| temp_name()))
}

/// Create the first of `names` in `dir` that does not exist yet, exclusively
/// and without following a symlink that stands there.
fn create_first_free(
    dir: &Path,
    names: impl IntoIterator<Item = String>,
) -> io::Result<(PathBuf, File)> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    for name in names {
        let path = dir.join(name);
        match opts.open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        ErrorKind::AlreadyExists,
        format!("no free temporary name in {}", dir.display()),
    ))
}

/// Write `bytes` to `path` atomically; the temporary file is removed on any error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if path.file_name().is_none() {
        return Err(io::Error::new(ErrorKind::InvalidInput, "not a file path"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let (tmp, mut f) = create_temp(dir)?;
    let written = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f); // closed before the rename (Windows will not rename an open file)
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(dir)
}

/// Make the rename durable. Folders that cannot be synced (some network and
/// virtual file systems refuse) are left as they are.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        if !matches!(e.kind(), ErrorKind::InvalidInput | ErrorKind::Unsupported) {
            return Err(e);
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("routecore-atomic-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn listing(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn temp_names_are_unique() {
        let names: std::collections::HashSet<String> = (0..10_000).map(|_| temp_name()).collect();
        assert_eq!(names.len(), 10_000);
    }

    #[test]
    fn writes_and_replaces_leaving_no_temp() {
        let d = scratch("replace");
        let p = d.join("a.bin");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(listing(&d), ["a.bin"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn concurrent_writes_from_threads_all_succeed() {
        let d = scratch("threads");
        std::thread::scope(|s| {
            for t in 0..16 {
                let d = &d;
                s.spawn(move || {
                    for i in 0..25 {
                        let body = format!("{t}-{i}");
                        write_atomic(&d.join("same.bin"), body.as_bytes()).unwrap();
                        write_atomic(&d.join(format!("own-{t}.bin")), body.as_bytes()).unwrap();
                    }
                });
            }
        });
        assert_eq!(listing(&d).len(), 17, "{:?}", listing(&d));
        assert!(fs::read_to_string(d.join("same.bin"))
            .unwrap()
            .ends_with("-24"));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failure_removes_the_temp() {
        let d = scratch("fail");
        // The target is a non-empty folder: the rename fails after the write.
        let p = d.join("target");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("x"), b"x").unwrap();
        assert!(write_atomic(&p, b"data").is_err());
        assert_eq!(listing(&d), ["target"]);
        assert!(write_atomic(&d.join("missing").join("f"), b"x").is_err());
        fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn planted_symlinks_are_not_followed() {
        let d = scratch("symlink");
        let victim = d.join("victim");
        fs::write(&victim, b"keep").unwrap();
        // At the target: the link itself is replaced, its target untouched.
        let target = d.join("index.rci");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_atomic(&target, b"new").unwrap();
        assert!(!fs::symlink_metadata(&target)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        // At temporary names, dangling or not: skipped, nothing written through.
        std::os::unix::fs::symlink(&victim, d.join("t1")).unwrap();
        std::os::unix::fs::symlink(d.join("absent"), d.join("t2")).unwrap();
        let names = ["t1", "t2", "t3"].map(String::from);
        let (p, mut f) = create_first_free(&d, names.clone()).unwrap();
        f.write_all(b"tmp").unwrap();
        assert_eq!(p, d.join("t3"));
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        assert!(!d.join("absent").exists());
        let e = create_first_free(&d, names).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        fs::remove_dir_all(&d).unwrap();
    }
}
