//! Sequence counters set near their wrap, which would take 2^31 creates through a server.
//!
//! A sequential child's number is its parent's count of child creates (`PrepRequestProcessor`
//! reads the parent's internal `cversion`). No request sets that count, and raising it by
//! creating children runs at the server's write rate: days, for a counter near 2^31. So the
//! server is stopped, the count is raised in its data directory by ZooKeeper's own classes
//! (`tests/java/SequenceSeed.java`: a create and a delete replayed with the count a create's
//! transaction carries, then a snapshot), and the server is started again on the same port,
//! its sessions intact.

use std::process::Command;

use crate::error::{Error, Result};
use crate::install::Installation;
use crate::server::{blocking, ZkServer};

const SEED_SOURCE: &str = include_str!("../java/SequenceSeed.java");

impl ZkServer {
    /// Makes `next` the sequence number the next sequential child of `path` (a server path:
    /// with any chroot in front) gets, as if `next` children had been created under it. The
    /// counter only rises: a `next` below the present count changes nothing. The server is
    /// stopped meanwhile and started again on the same port with the same data; clients
    /// reconnect to their sessions if that takes less than their session timeout (a JVM's
    /// start and a snapshot: seconds). Needs a JDK (`java` runs the seeding source file).
    pub async fn set_sequence_counter(&self, path: &str, next: i32) -> Result<()> {
        let installation = match &self.options().installation {
            Some(i) => i.clone(),
            None => Installation::locate()?,
        };
        let dir = self.dir();
        let data = dir.join("data");
        let source = dir.join("SequenceSeed.java");
        std::fs::write(&source, SEED_SOURCE)
            .map_err(|e| Error::io(format!("writing {}", source.display()), e))?;
        self.kill();
        let path = path.to_owned();
        let out = blocking(move || {
            Command::new(&installation.java)
                .args([
                    "-Xmx128m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-cp",
                ])
                .arg(installation.classpath_string())
                .arg(&source)
                .arg(&data)
                .arg(&path)
                .arg(next.to_string())
                .output()
                .map_err(|e| Error::io("running java SequenceSeed.java (needs a JDK)", e))
        })
        .await?;
        if !out.status.success() {
            // Up again before reporting, so the caller's other checks still run.
            let _ = self.restart().await;
            return Err(Error::io(
                format!(
                    "SequenceSeed failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                ),
                std::io::ErrorKind::Other.into(),
            ));
        }
        self.restart().await
    }
}
