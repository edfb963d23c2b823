//! The short chaos run, as part of `cargo test`: 18 s of contention on a 3-member ensemble,
//! Rust contenders beside Curator's (Curator layout) and kazoo's (kazoo layout), with the
//! leader killed and restarted and Rust holders of both layouts paused with `SIGSTOP` past
//! their session timeout. The run itself checks mutual exclusion (the marker), the order of
//! the fencing tokens, the stalls and the paused holders, and exits 1 on any failure; this
//! test also checks it did inject what it claims. The long run is the same command with a
//! longer `--duration` (see BENCHMARKS.md).
//!
//! How many faults fit in 18 s depends on the machine's pace, so the run is asked for the
//! faults this test needs (`--min-leader-kills`, `--min-pauses`) and goes on past its
//! duration until it has made them (at most 180 s more).

use std::time::Duration;

/// Reads `label` from the report's `faults:` line, e.g. `2 member kills` → 2.
fn count_before(report: &str, label: &str) -> usize {
    let line = report
        .lines()
        .find(|l| l.starts_with("faults:"))
        .unwrap_or_else(|| panic!("no faults line in:\n{report}"));
    let at = line
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {line}"));
    line[..at]
        .split(|c: char| !c.is_ascii_digit())
        .rfind(|w| !w.is_empty())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_chaos_run_keeps_mutual_exclusion() {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_zookeeper-chaos"))
        .args([
            "--duration",
            "18s",
            "--session-timeout",
            "3s",
            "--kill-every",
            "4s",
            "--down-for",
            "2s",
            "--pause-every",
            "1s",
            "--min-leader-kills",
            "1",
            "--min-pauses",
            "1",
        ])
        .kill_on_drop(true)
        .output();
    // A bound on a hang only: the 18 s, the 180 s the run may go on for its faults, and the
    // ensemble's start and stop, with room to spare.
    let out = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("the run ends within its bounds")
        .expect("run zookeeper-chaos");
    let report = String::from_utf8_lossy(&out.stdout);
    println!("{report}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the run failed:\n{report}");
    assert!(report.contains("result: PASS"), "{report}");
    assert!(count_before(&report, "of the leader") >= 1, "{report}");
    assert!(count_before(&report, "paused holders") >= 2, "{report}");
    for layout in ["rust-curator", "rust-kazoo"] {
        assert!(
            report.contains(&format!("  {layout}")),
            "no {layout} contender was paused:\n{report}"
        );
    }
}
