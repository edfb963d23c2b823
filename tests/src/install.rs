//! Where Java and the ZooKeeper jars live: Debian's locations, or environment overrides.

use std::env;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable naming the `java` binary to run.
pub const JAVA_ENV: &str = "ZK_TESTS_JAVA";
/// Environment variable holding a complete classpath for the ZooKeeper server
/// (`:`-separated), used verbatim.
pub const CLASSPATH_ENV: &str = "ZK_TESTS_CLASSPATH";
/// Environment variable naming an unpacked upstream ZooKeeper release (jars in `lib/`).
pub const HOME_ENV: &str = "ZOOKEEPER_HOME";

/// Debian's jar directory (packages `libzookeeper-java`, `liblog4j1.2-java`, `libslf4j-java`).
const DEBIAN_JARS: &str = "/usr/share/java";

/// A Java runtime and the classpath that runs a ZooKeeper server.
#[derive(Clone, Debug)]
pub struct Installation {
    /// The `java` binary.
    pub java: PathBuf,
    /// The classpath entries.
    pub classpath: Vec<PathBuf>,
}

impl Installation {
    /// Finds Java and ZooKeeper, honouring [`JAVA_ENV`], [`CLASSPATH_ENV`] and [`HOME_ENV`].
    ///
    /// The error names the setup command when something is missing.
    pub fn locate() -> Result<Installation> {
        Ok(Installation {
            java: locate_java()?,
            classpath: locate_classpath()?,
        })
    }

    /// The classpath as one `:`-joined string.
    pub fn classpath_string(&self) -> String {
        let parts: Vec<String> = self
            .classpath
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        parts.join(":")
    }
}

fn locate_java() -> Result<PathBuf> {
    let mut tried = Vec::new();
    if let Some(java) = env::var_os(JAVA_ENV) {
        // An explicit choice that does not exist is an error, not a hint to look elsewhere.
        let java = PathBuf::from(java);
        if is_file(&java) {
            return Ok(java);
        }
        return Err(Error::JavaNotFound {
            looked_at: format!("{JAVA_ENV}={}", java.display()),
        });
    }
    let mut candidates = Vec::new();
    if let Some(home) = env::var_os("JAVA_HOME") {
        candidates.push(PathBuf::from(home).join("bin/java"));
    }
    candidates.push(PathBuf::from("/usr/bin/java"));
    if let Some(path) = env::var_os("PATH") {
        candidates.extend(env::split_paths(&path).map(|dir| dir.join("java")));
    }
    for candidate in candidates {
        if is_file(&candidate) {
            return Ok(candidate);
        }
        tried.push(candidate.display().to_string());
    }
    Err(Error::JavaNotFound {
        looked_at: tried.join(", "),
    })
}

fn locate_classpath() -> Result<Vec<PathBuf>> {
    if let Some(cp) = env::var_os(CLASSPATH_ENV) {
        return Ok(env::split_paths(&cp).collect());
    }
    let mut tried = Vec::new();
    if let Some(home) = env::var_os(HOME_ENV) {
        let home = PathBuf::from(home);
        if let Some(cp) = release_classpath(&home) {
            return Ok(cp);
        }
        tried.push(format!("{HOME_ENV}={}/lib", home.display()));
    }
    let debian = Path::new(DEBIAN_JARS);
    let server_jar = debian.join("zookeeper.jar");
    if is_file(&server_jar) {
        // Debian's jar lists its dependencies in its manifest; the logging binding is not
        // among them, so add log4j's so that the server writes its log file. Nor is Netty's
        // codec, which the TLS handler of the secure client port needs.
        let mut cp = vec![server_jar];
        for extra in ["slf4j-log4j12.jar", "log4j-1.2.jar", "netty-codec.jar"] {
            let jar = debian.join(extra);
            if is_file(&jar) {
                cp.push(jar);
            }
        }
        return Ok(cp);
    }
    tried.push(server_jar.display().to_string());
    // Unpacked upstream releases in the usual places.
    for home in ["/usr/share/zookeeper", "/opt/zookeeper"] {
        let home = Path::new(home);
        if let Some(cp) = release_classpath(home) {
            return Ok(cp);
        }
        tried.push(format!("{}/lib", home.display()));
    }
    Err(Error::ZooKeeperNotFound {
        looked_at: tried.join(", "),
    })
}

/// The classpath of an upstream release unpacked at `home` (jars in `lib/` and `home`).
fn release_classpath(home: &Path) -> Option<Vec<PathBuf>> {
    let mut jars = jars_in(&home.join("lib"));
    if !jars.iter().any(|j| file_name_starts(j, "zookeeper-")) {
        return None;
    }
    jars.extend(jars_in(home));
    Some(jars)
}

fn jars_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut jars: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "jar"))
        .collect();
    jars.sort();
    jars
}

fn file_name_starts(path: &Path, prefix: &str) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(prefix))
}

fn is_file(path: &Path) -> bool {
    path.is_file()
}
