//! The clients other than ours that the recipes must agree with, as peer programs: Apache
//! Curator (Debian's `libcurator-recipes-java`, 5.4) for programs written in Java, and kazoo
//! (Debian's `python3-kazoo`) for programs written in Python.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result, SETUP_COMMAND};

/// The jars a Curator peer compiles and runs against.
pub const CURATOR_JARS: &[&str] = &[
    "/usr/share/java/curator-recipes.jar",
    "/usr/share/java/curator-framework.jar",
    "/usr/share/java/curator-client.jar",
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/zookeeper-jute.jar",
    "/usr/share/java/slf4j-nop.jar",
];

/// Compiles the Java `sources` against [`CURATOR_JARS`] into a directory under `cache` named
/// after the sources' hash, once per version of them (a concurrent build by another test
/// binary is harmless: either copy serves), and returns the classpath that runs them.
pub fn compile_curator_peers(sources: &[PathBuf], cache: &Path) -> Result<String> {
    for jar in CURATOR_JARS {
        if !Path::new(jar).exists() {
            return Err(Error::Io {
                what: format!("{jar} missing: run `{SETUP_COMMAND}` (libcurator-recipes-java)"),
                source: std::io::ErrorKind::NotFound.into(),
            });
        }
    }
    let mut sources = sources.to_vec();
    sources.sort();
    let mut h = DefaultHasher::new();
    for source in &sources {
        let text = std::fs::read(source).map_err(|source_err| Error::Io {
            what: format!("reading {}", source.display()),
            source: source_err,
        })?;
        text.hash(&mut h);
    }
    let out = cache.join(format!("curator-peers-{:016x}", h.finish()));
    let jars = CURATOR_JARS.join(":");
    if !out.exists() {
        let tmp = out.with_extension(format!("tmp{}", std::process::id()));
        std::fs::create_dir_all(&tmp).map_err(|source| Error::Io {
            what: format!("creating {}", tmp.display()),
            source,
        })?;
        let status = Command::new("javac")
            .args(["-nowarn", "-d"])
            .arg(&tmp)
            .args(["-cp", &jars])
            .args(&sources)
            .status()
            .map_err(|source| Error::Io {
                what: format!("running javac (install a JDK: `{SETUP_COMMAND}`)"),
                source,
            })?;
        if !status.success() {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(Error::Io {
                what: format!("javac {sources:?} failed ({status})"),
                source: std::io::ErrorKind::InvalidData.into(),
            });
        }
        // Another process may have won the race; either copy is the same.
        let _ = std::fs::rename(&tmp, &out);
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(format!("{jars}:{}", out.display()))
}

/// The Python that has Debian's python3-kazoo.
pub fn kazoo_python() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}
