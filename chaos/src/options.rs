//! Command-line options of both roles: the run (the default) and one contender process.

use std::time::Duration;

use zookeeper_recipes::Layout;

/// How a run is shaped.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// How long the contenders contend.
    pub duration: Duration,
    /// Every contender's session timeout.
    pub session_timeout: Duration,
    /// How long a holder stays in its critical section.
    pub hold: Duration,
    /// Rust contender processes per lock.
    pub rust: usize,
    /// Curator contenders (threads of one JVM, one session each) on the Curator-layout lock.
    pub curator: usize,
    /// kazoo contenders (threads of one Python process) on the kazoo-layout lock.
    pub kazoo: usize,
    /// Pause between two member kills.
    pub kill_every: Duration,
    /// How long a killed member stays down.
    pub down_for: Duration,
    /// Pause between two paused holders.
    pub pause_every: Duration,
    /// Leader kills the run makes at least, going on past `duration` (up to
    /// [`OVERTIME`]) until it has: what a run checks must not depend on the machine's pace.
    pub min_leader_kills: usize,
    /// Paused holders of each layout the run makes at least, past `duration` if need be.
    pub min_pauses: usize,
}

/// How far past its duration a run goes on to reach its minimum faults: a bound on a hang,
/// far past what any machine needs (a fault takes a few session timeouts).
pub const OVERTIME: Duration = Duration::from_secs(180);

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            duration: Duration::from_secs(60),
            session_timeout: Duration::from_secs(3),
            hold: Duration::from_millis(20),
            rust: 3,
            curator: 2,
            kazoo: 2,
            kill_every: Duration::from_secs(15),
            down_for: Duration::from_secs(3),
            pause_every: Duration::from_secs(10),
            min_leader_kills: 0,
            min_pauses: 0,
        }
    }
}

/// One Rust contender process.
#[derive(Clone, Debug)]
pub struct ContendOptions {
    pub connect: String,
    pub lock: String,
    pub marker: String,
    pub layout: Layout,
    pub who: String,
    pub hold: Duration,
    pub session_timeout: Duration,
}

/// What the command line asks for.
pub enum Role {
    Run(RunOptions),
    Contend(ContendOptions),
    Help,
}

pub const USAGE: &str = "\
zookeeper-chaos: mutual exclusion under chaos. Rust contenders beside Curator and kazoo
contenders on one lock per layout (Curator's, kazoo's), on a 3-member ensemble whose members
are killed and restarted while they contend, and Rust holders paused with SIGSTOP past their
session timeout. Each holder creates an ephemeral marker inside its critical section (a
second holder's create fails) and reports its fencing token. Prints grants, violations,
token order and stalls; exits 1 if anything was wrong.

usage: zookeeper-chaos [--duration 60s] [--session-timeout 3s] [--hold 20ms] [--rust 3]
                       [--curator 2] [--kazoo 2] [--kill-every 15s] [--down-for 3s]
                       [--pause-every 10s] [--min-leader-kills 0] [--min-pauses 0]

--min-leader-kills N and --min-pauses N (paused holders of each layout) make the run go on
past --duration until it has made that many, for at most 180 s more.
";

/// Parses `args` (without the program name).
pub fn parse(args: &[String]) -> Result<Role, String> {
    if args.first().map(String::as_str) == Some("contend") {
        return parse_contend(&args[1..]).map(Role::Contend);
    }
    let mut o = RunOptions::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(Role::Help);
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--duration" => o.duration = duration(value)?,
            "--session-timeout" => o.session_timeout = duration(value)?,
            "--hold" => o.hold = duration(value)?,
            "--rust" => o.rust = count(value)?,
            "--curator" => o.curator = count(value)?,
            "--kazoo" => o.kazoo = count(value)?,
            "--kill-every" => o.kill_every = duration(value)?,
            "--down-for" => o.down_for = duration(value)?,
            "--pause-every" => o.pause_every = duration(value)?,
            "--min-leader-kills" => o.min_leader_kills = count(value)?,
            "--min-pauses" => o.min_pauses = count(value)?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if o.rust < 2 {
        return Err("--rust must be at least 2: one is paused while another takes over".into());
    }
    Ok(Role::Run(o))
}

fn parse_contend(args: &[String]) -> Result<ContendOptions, String> {
    let get = |name: &str| -> Result<String, String> {
        let at = args
            .iter()
            .position(|a| a == name)
            .ok_or(format!("contend: {name} missing"))?;
        args.get(at + 1)
            .cloned()
            .ok_or(format!("contend: {name} needs a value"))
    };
    Ok(ContendOptions {
        connect: get("--connect")?,
        lock: get("--lock")?,
        marker: get("--marker")?,
        layout: match get("--layout")?.as_str() {
            "curator" => Layout::Curator,
            "kazoo" => Layout::Kazoo,
            other => return Err(format!("contend: unknown layout {other}")),
        },
        who: get("--who")?,
        hold: duration(&get("--hold")?)?,
        session_timeout: duration(&get("--session-timeout")?)?,
    })
}

/// `250ms`, `20s`, `10m`, `1h`.
pub fn duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or(format!("{text:?}: a duration needs a unit (ms, s, m, h)"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: not a duration"))?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("{text:?}: unknown unit {unit:?}")),
    })
}

fn count(text: &str) -> Result<usize, String> {
    text.parse().map_err(|_| format!("{text:?}: not a count"))
}

/// The argument list that starts a contender process with `o`.
pub fn contend_args(o: &ContendOptions) -> Vec<String> {
    let layout = match o.layout {
        Layout::Curator => "curator",
        Layout::Kazoo => "kazoo",
    };
    [
        "contend",
        "--connect",
        &o.connect,
        "--lock",
        &o.lock,
        "--marker",
        &o.marker,
        "--layout",
        layout,
        "--who",
        &o.who,
        "--hold",
        &format!("{}ms", o.hold.as_millis()),
        "--session-timeout",
        &format!("{}ms", o.session_timeout.as_millis()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration("10m"), Ok(Duration::from_secs(600)));
        assert!(duration("10").is_err());
        assert!(duration("10x").is_err());
    }

    #[test]
    fn contend_args_round_trip() {
        let o = ContendOptions {
            connect: "127.0.0.1:1,127.0.0.1:2".into(),
            lock: "/chaos/lock".into(),
            marker: "/chaos/inside".into(),
            layout: Layout::Kazoo,
            who: "rust-kazoo-1".into(),
            hold: Duration::from_millis(20),
            session_timeout: Duration::from_secs(3),
        };
        match parse(&contend_args(&o)).unwrap() {
            Role::Contend(back) => {
                assert_eq!(back.lock, o.lock);
                assert_eq!(back.layout, Layout::Kazoo);
                assert_eq!(back.session_timeout, o.session_timeout);
            }
            _ => panic!("not a contender"),
        }
    }
}
