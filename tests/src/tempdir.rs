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
