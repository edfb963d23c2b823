//! The command line: global flags and one subcommand.

use clap::{Parser, Subcommand};

use crate::commands::{browse, coordinate, edit, elect, watch};
use crate::connection::Connection;

/// What the command of `lock`, `rwlock`, `semaphore` and `elect` finds in its environment.
macro_rules! lock_env {
    () => {
        "  ZK_LOCK_PATH      the lock's path as given (under the chroot)\n  \
           ZK_LOCK_NODE      our node's full path, from the ensemble's root (chroot included)\n  \
           ZK_FENCING_TOKEN  decimal, larger for every later grant (the node's czxid, which\n                    \
           zk stat shows in hexadecimal)\n  \
           ZK_SERVER         the servers and the chroot in effect, and every setting given by\n                    \
           flag (ZK_AUTH, ZK_TLS*, ZK_SASL_*): the command runs zk as its caller did"
    };
}

/// How a wait for a lock goes through a session's expiry.
macro_rules! lock_wait {
    () => {
        "A waiter whose session expires (the servers out of reach for the session timeout)\n\
         queues again on a new session with the same settings, until --timeout if given.\n\n"
    };
}

/// The heading of the flags every command takes, listed after the command's own flags (TLS
/// and SASL have headings of their own).
pub const GLOBAL_HEADING: &str = "Global options";

/// Browse and edit ZooKeeper, and run commands under its locks and elections.
#[derive(Parser, Debug)]
#[command(
    name = "zk",
    version,
    propagate_version = true,
    after_help = "Examples:\n  zk --server zk1:2181,zk2:2181 ls -R /app\n  zk get /app/config > config.bin\n  \
                  zk lock /locks/deploy -- ./deploy.sh\n  \
                  zk --server zk1:2281 --tls --tls-ca ca.pem --tls-cert me.pem --tls-key me.key ls /\n  \
                  ZK_SASL_PASSWORD=secret zk --sasl-digest bob get /app/config\n\n\
                  Exit codes: 64 bad usage, 65 ZooKeeper error, 69 connection failure, 74 I/O error,\n  \
                  75 lock lost, 77 credentials or certificates refused, 124 timeout; lock, rwlock,\n  \
                  semaphore and elect exit with the command's status."
)]
pub struct Cli {
    /// Print JSON: one document, or one per line for streams.
    #[arg(long, global = true, help_heading = GLOBAL_HEADING)]
    pub json: bool,

    // Last: it ends with headed groups (TLS, SASL) that would take in the flags after it.
    #[command(flatten)]
    pub connection: Connection,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List a node's children.
    #[command(
        after_help = "Examples:\n  zk ls /app\n  zk ls -R /app | head\n  zk --json ls -s /app"
    )]
    Ls(browse::Ls),
    /// Print a node's data, byte for byte.
    #[command(
        after_help = "Examples:\n  zk get /app/config > config.bin\n  zk get -w /app/config   # then wait for its next change"
    )]
    Get(browse::Get),
    /// Print a node's stat.
    #[command(after_help = "Example:\n  zk stat /app/config")]
    Stat(browse::StatCmd),
    /// Replace a node's data (`-` reads it from standard input).
    #[command(
        after_help = "Examples:\n  zk set /app/config v2\n  zk set -v 3 /app/config - < config.bin"
    )]
    Set(edit::Set),
    /// Create a node (`-` reads its data from standard input).
    #[command(
        after_help = "Examples:\n  zk create -p /app/config/db 'host=db1'\n  zk create -s /queue/job- - < job.json\n  \
                            zk create -e /workers/$(hostname)   # stays until zk is interrupted"
    )]
    Create(edit::Create),
    /// Delete a node.
    #[command(after_help = "Example:\n  zk delete -v 3 /app/config")]
    Delete(edit::Delete),
    /// Delete a node and everything under it.
    #[command(after_help = "Example:\n  zk deleteall /app/old")]
    Deleteall(edit::Deleteall),
    /// Wait until the connected server has caught up with the leader.
    #[command(after_help = "Example:\n  zk sync /app")]
    Sync(browse::Sync),
    /// Print a node's ACL.
    #[command(after_help = "Example:\n  zk getacl /app")]
    Getacl(browse::Getacl),
    /// Replace a node's ACL: scheme:id:perms[,scheme:id:perms...], perms from `cdrwa`.
    #[command(
        after_help = "Examples:\n  zk setacl /app world:anyone:r,digest:admin:XyZ...=:cdrwa\n  zk setacl -R /app world:anyone:cdrwa"
    )]
    Setacl(edit::Setacl),
    /// Check an identity: add it to a session and print the session's identities. It lasts
    /// for this command only; use --auth or ZK_AUTH on the others.
    #[command(after_help = "Example:\n  zk addauth digest alice:secret")]
    Addauth(edit::Addauth),
    /// Print the identities the server gives this session.
    #[command(after_help = "Example:\n  ZK_AUTH=alice:secret zk whoami")]
    Whoami,
    /// List the ephemeral nodes under a path, with the session owning each (any session, not
    /// only ours).
    #[command(after_help = "Example:\n  zk ephemerals /locks")]
    Ephemerals(browse::Ephemerals),
    /// Count every node under a path (getAllChildrenNumber).
    #[command(after_help = "Example:\n  zk count /app")]
    Count(browse::Count),
    /// Print the ensemble's configuration (/zookeeper/config; --chroot does not apply).
    #[command(after_help = "Example:\n  zk config")]
    Config,
    /// Draw the subtree under a path.
    #[command(after_help = "Example:\n  zk tree --depth 2 /app")]
    Tree(browse::Tree),
    /// Find nodes whose name matches a glob.
    #[command(after_help = "Example:\n  zk find /app -name '*lock*'")]
    Find(browse::Find),
    /// Print every change under a path as it happens, through reconnects, until interrupted.
    #[command(
        after_help = "Examples:\n  zk watch /app/config\n  zk watch --data /app/config\n  \
                      zk --json watch --recursive /app | jq .\n\n\
                      Each line: the time zk received the event (UTC), its type and its path; with\n\
                      --data the node's mzxid and data, read when the line is printed.\n\n\
                      After a reconnect, the changes made while cut off follow the 'reconnected' line on\n\
                      standard error, as the client reads again what it watches: one event per node and\n\
                      kind of change (several data changes give one NodeDataChanged; a node created\n\
                      meanwhile gives NodeCreated only, one deleted and created again NodeDeleted then\n\
                      NodeCreated, one created and deleted again nothing), a node before its children;\n\
                      of a node's children, those deleted first, then those created, each in name order.\n\
                      That is not the order in which the server applied them, and changes made after the\n\
                      reconnect may come among them."
    )]
    Watch(watch::Watch),
    /// Run a command while holding a lock.
    #[command(
        after_help = concat!("Example:\n  zk lock /locks/deploy -- ./deploy.sh --prod\n\n",
            lock_wait!(),
            "The command gets in its environment:\n",
            lock_env!()
        )
    )]
    Lock(coordinate::Lock),
    /// Run a command while holding a read or write lock (Curator's InterProcessReadWriteLock).
    #[command(
        after_help = concat!("Examples:\n  zk rwlock --read /locks/catalog -- ./export.sh\n  zk rwlock --write /locks/catalog -- ./import.sh\n\n",
            lock_wait!(),
            "The command gets in its environment:\n",
            lock_env!()
        )
    )]
    Rwlock(coordinate::Rwlock),
    /// Run a command while holding one of N leases (Curator's InterProcessSemaphoreV2).
    #[command(
        after_help = concat!("Example:\n  zk semaphore --permits 3 /semaphores/db -- ./migrate-shard.sh\n\n",
            lock_wait!(),
            "The command gets in its environment:\n",
            lock_env!()
        )
    )]
    Semaphore(coordinate::SemaphoreCmd),
    /// Run a command while leader of an election, or print each leader with --observe.
    #[command(
        after_help = concat!("Examples:\n  zk elect /election/scheduler --id $(hostname) -- ./scheduler\n  \
                            zk elect --observe /election/scheduler\n\n\
                            A candidate whose session expires joins the election again on a new session with\n\
                            the same settings, until --timeout if given.\n\n\
                            The command gets in its environment ZK_LEADER_ID (our participant id) and:\n\
                            ", lock_env!())
    )]
    Elect(elect::Elect),
    /// Print a shell completion script.
    #[command(after_help = "Example:\n  zk completions bash > /etc/bash_completion.d/zk")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// zkCli spells `find`'s flag `-name`; clap reads `--name`.
pub fn normalize(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut in_find = false;
    let mut past_flags = false;
    args.map(|arg| {
        if past_flags {
        } else if arg == "--" {
            // What follows is a command of `lock` and the like: left as it is.
            past_flags = true;
        } else if arg == "find" {
            in_find = true;
        } else if in_find && arg == "-name" {
            return "--name".into();
        }
        arg
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::normalize;

    fn norm(args: &[&str]) -> Vec<String> {
        normalize(args.iter().map(|a| a.into()))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn find_takes_zkcli_spelling_and_commands_are_left_alone() {
        assert_eq!(
            norm(&["zk", "find", "/", "-name", "x"]),
            ["zk", "find", "/", "--name", "x"]
        );
        assert_eq!(
            norm(&["zk", "lock", "/l", "--", "find", ".", "-name", "x"]),
            ["zk", "lock", "/l", "--", "find", ".", "-name", "x"]
        );
        assert_eq!(norm(&["zk", "ls", "-name"]), ["zk", "ls", "-name"]);
    }
}

#[cfg(test)]
mod definition {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
