//! Private working directories for servers, removed on drop.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Set to keep server directories (logs, data) after the test, for diagnosis.
pub const KEEP_DIRS_ENV: &str = "ZK_TESTS_KEEP_DIRS";
/// Set to choose the parent directory of server directories (default: the system temp dir).
pub const TMPDIR_ENV: &str = "ZK_TESTS_TMPDIR";

pub(crate) fn keep_dirs() -> bool {
    std::env::var_os(KEEP_DIRS_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Removes directories left by test processes that were killed (their `Drop` never ran).
/// A directory belongs to the process whose id is in its name; it is removed only when no
/// such process exists.
fn sweep_dead(base: &Path) {
    if keep_dirs() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("zk-tests-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone && pid > 0 {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A directory unique to this process and call; removed (unless kept) on drop.
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub(crate) fn new(label: &str) -> Result<TempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::var_os(TMPDIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep_dead(&base));
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("zk-tests-{}-{label}-{n}", std::process::id()));
        // A stale directory can only come from a dead process that had our pid.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(TempDir { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !keep_dirs() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
