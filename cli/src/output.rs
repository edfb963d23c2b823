//! Standard output: raw bytes, lines, or JSON; a closed pipe ends the command quietly.
//!
//! JSON conventions (`--json`): one document per command, or one per line for streams. Node
//! data is `"data"` with `"encoding"`: `"utf-8"` when the bytes are valid UTF-8 (the text as
//! is), else `"base64"` (standard alphabet, padded). A stat is an object with ZooKeeper's field
//! names (`czxid`, `mzxid`, `ctime`, `mtime`, `version`, `cversion`, `aversion`,
//! `ephemeralOwner`, `dataLength`, `numChildren`, `pzxid`), all numbers; times are ms since
//! the Unix epoch.

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine;
use serde_json::{json, Value};
use zookeeper_tokio::Stat;

use crate::exit::{Failure, IO};

/// A line on standard error. One that cannot be written (a full disk, a closed pipe, a logger
/// gone) is lost rather than panicking, as `eprintln!` would: the exit code stays the
/// command's, and a long `watch` or `lock` runs on.
pub fn note(line: std::fmt::Arguments) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// The command's standard output.
pub struct Out {
    writer: BufWriter<Stdout>,
    /// `--json` was given.
    pub json: bool,
    terminal: bool,
}

impl Out {
    pub fn new(json: bool) -> Out {
        let stdout = io::stdout();
        let terminal = stdout.is_terminal();
        Out {
            writer: BufWriter::new(stdout),
            json,
            terminal,
        }
    }

    /// Node data as it is, byte for byte; on a terminal a newline follows data that lacks one,
    /// so that the prompt does not run on.
    pub fn data(&mut self, data: &[u8]) -> Result<(), Failure> {
        let mut r = self.writer.write_all(data);
        if self.terminal && !data.is_empty() && !data.ends_with(b"\n") {
            r = r.and_then(|()| self.writer.write_all(b"\n"));
        }
        r.map_err(closed)
    }

    /// After `data` written by [`Out::data`], a newline if it left the line open: what follows
    /// (a stat, an event) starts on a line of its own, terminal or not.
    pub fn end_line(&mut self, data: &[u8]) -> Result<(), Failure> {
        if self.terminal || data.is_empty() || data.ends_with(b"\n") {
            return Ok(());
        }
        self.writer.write_all(b"\n").map_err(closed)
    }

    pub fn line(&mut self, line: impl std::fmt::Display) -> Result<(), Failure> {
        writeln!(self.writer, "{line}").map_err(closed)
    }

    /// One JSON document on one line.
    pub fn json(&mut self, value: &Value) -> Result<(), Failure> {
        serde_json::to_writer(&mut self.writer, value)
            .map_err(io::Error::from)
            .and_then(|()| self.writer.write_all(b"\n"))
            .map_err(closed)
    }

    pub fn flush(&mut self) -> Result<(), Failure> {
        self.writer.flush().map_err(closed)
    }
}

/// A reader that went away (`zk ls -R / | head`) is a normal end, not an error.
fn closed(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::silent(0)
    } else {
        Failure::new(IO, format!("writing the output: {e}"))
    }
}

/// Now, in milliseconds since the Unix epoch (as stat times are).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Node data for JSON: the text when it is UTF-8, else base64; with the encoding's name.
pub fn data_json(data: &[u8]) -> (Value, &'static str) {
    match std::str::from_utf8(data) {
        Ok(text) => (Value::String(text.to_owned()), "utf-8"),
        Err(_) => (
            Value::String(base64::engine::general_purpose::STANDARD.encode(data)),
            "base64",
        ),
    }
}

pub fn stat_json(stat: &Stat) -> Value {
    json!({
        "czxid": stat.czxid,
        "mzxid": stat.mzxid,
        "ctime": stat.ctime,
        "mtime": stat.mtime,
        "version": stat.version,
        "cversion": stat.cversion,
        "aversion": stat.aversion,
        "ephemeralOwner": stat.ephemeral_owner,
        "dataLength": stat.data_length,
        "numChildren": stat.num_children,
        "pzxid": stat.pzxid,
    })
}

/// The stat as zkCli prints it, times in RFC 3339 (UTC).
pub fn stat_lines(stat: &Stat) -> Vec<String> {
    vec![
        format!("cZxid = {:#x}", stat.czxid),
        format!("ctime = {}", time(stat.ctime)),
        format!("mZxid = {:#x}", stat.mzxid),
        format!("mtime = {}", time(stat.mtime)),
        format!("pZxid = {:#x}", stat.pzxid),
        format!("cversion = {}", stat.cversion),
        format!("dataVersion = {}", stat.version),
        format!("aclVersion = {}", stat.aversion),
        format!("ephemeralOwner = {:#x}", stat.ephemeral_owner as u64),
        format!("dataLength = {}", stat.data_length),
        format!("numChildren = {}", stat.num_children),
    ]
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC (`2026-11-26T14:50:01.123Z`).
pub fn time(ms: i64) -> String {
    match u64::try_from(ms) {
        Ok(ms) => {
            humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
        }
        Err(_) => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_text_when_it_can_be() {
        assert_eq!(data_json(b"v1"), (json!("v1"), "utf-8"));
        assert_eq!(data_json(&[0xff, 0, 1]), (json!("/wAB"), "base64"));
        assert_eq!(data_json(b""), (json!(""), "utf-8"));
    }

    #[test]
    fn stat_text_names_fields_as_zkcli_does() {
        let lines = stat_lines(&Stat {
            czxid: 0x10,
            ctime: 0,
            ephemeral_owner: -1,
            ..Stat::default()
        });
        assert_eq!(lines[0], "cZxid = 0x10");
        assert_eq!(lines[1], "ctime = 1970-01-01T00:00:00.000Z");
        assert_eq!(lines[8], "ephemeralOwner = 0xffffffffffffffff");
    }
}
