//! `zk help COMMAND`: the command's own flags first, the flags every command takes after them
//! under headings of their own.

mod common;

use common::run;

/// The sections of a help text, by heading (`Options`, `Global options`, `TLS`, ...), each
/// with the flags it lists.
fn sections(help: &str) -> Vec<(String, Vec<String>)> {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    for line in help.lines() {
        if let Some(heading) = line.strip_suffix(':').filter(|h| !h.starts_with(' ')) {
            sections.push((heading.to_owned(), Vec::new()));
        } else if let (Some(flag), Some(section)) = (
            line.trim_start()
                .split([' ', ','])
                .find(|w| w.starts_with("--")),
            sections.last_mut(),
        ) {
            if line.starts_with("  ") && !line.starts_with("         ") {
                section.1.push(flag.to_owned());
            }
        }
    }
    sections
}

fn flags_under<'a>(sections: &'a [(String, Vec<String>)], heading: &str) -> &'a [String] {
    &sections
        .iter()
        .find(|(h, _)| h == heading)
        .unwrap_or_else(|| panic!("no {heading:?} section in {sections:?}"))
        .1
}

#[tokio::test]
async fn a_commands_own_flags_come_first_and_the_global_ones_under_their_headings() {
    for (command, own) in [
        (
            "lock",
            &["--layout", "--signal", "--grace", "--suspend-limit"][..],
        ),
        ("create", &["--parents", "--sequential", "--ephemeral"][..]),
    ] {
        let help = run("127.0.0.1:1", &["help", command]).await.ok();
        let sections = sections(&help);
        let headings: Vec<&str> = sections.iter().map(|(h, _)| h.as_str()).collect();
        let options = headings.iter().position(|h| *h == "Options").unwrap();
        let global = headings
            .iter()
            .position(|h| *h == "Global options")
            .unwrap();
        assert!(options < global, "{headings:?}");
        let listed = flags_under(&sections, "Options");
        for flag in own {
            assert!(listed.iter().any(|f| f == flag), "{flag} in {listed:?}");
        }
        for (heading, flags) in [
            (
                "Global options",
                &["--server", "--chroot", "--auth", "--json"][..],
            ),
            ("TLS", &["--tls", "--tls-ca"][..]),
            ("SASL", &["--sasl-digest"][..]),
        ] {
            let under = flags_under(&sections, heading);
            for flag in flags {
                assert!(
                    under.iter().any(|f| f == flag),
                    "{flag} under {heading}: {under:?}"
                );
                assert!(
                    !listed.iter().any(|f| f == flag),
                    "{flag} among the command's own"
                );
            }
        }
    }
}

#[tokio::test]
async fn watch_help_says_in_what_order_missed_changes_come() {
    let help = run("127.0.0.1:1", &["help", "watch"]).await.ok();
    let text = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        "--data",
        "After a reconnect",
        "a node before its children; of a node's children, those deleted first, then those created, each in name order",
        "not the order in which the server applied them",
    ] {
        assert!(text.contains(said), "{said:?} in {help}");
    }
}
