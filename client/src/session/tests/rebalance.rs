//! Replacing the server list in the machine: a client whose server leaves the list moves,
//! gracefully: what is in flight is answered first, what is made meanwhile waits.

use super::*;

fn connected_to(n: u16) -> (Harness, HostPort) {
    let mut h = Harness::new(config(n));
    let host = match h.actions().last() {
        Some(Action::Connect(host)) => host.clone(),
        other => panic!("{other:?}"),
    };
    h.s.actions.push_back(Action::Connect(host.clone()));
    h.establish(0x42, 3000);
    assert_eq!(h.state(), SessionState::Connected);
    (h, host)
}

#[test]
fn a_client_whose_server_leaves_moves_after_its_replies_arrive() {
    let (mut h, current) = connected_to(3);
    let mut in_flight = h.get_data("/a");
    let xid = h.xids()[0].0;
    let others: Vec<HostPort> = hosts(3).into_iter().filter(|h| *h != current).collect();
    h.s.update_hosts(others.clone(), h.now);
    assert!(h.actions().is_empty(), "no move while a reply is due");
    let mut held = h.get_data("/b");
    assert!(h.sent().is_empty(), "requests made meanwhile wait");

    h.reply(xid, 5, ErrorCode::Ok, &[0, 0, 0, 0]);
    assert!(
        matches!(result(&mut in_flight), Some(Ok(()))),
        "answered, not lost"
    );
    let actions = h.actions();
    let target = match actions.last() {
        Some(Action::Connect(target)) => target.clone(),
        other => panic!("{other:?}"),
    };
    assert!(others.contains(&target), "{target:?}");
    assert_eq!(h.state(), SessionState::Disconnected);
    h.s.actions.push_back(Action::Connect(target));
    let request = h.establish(0x42, 3000);
    assert_eq!(request.session_id, 0x42, "the same session resumes");
    let sent = h.xids();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1, OpCode::GetData);
    h.reply(sent[0].0, 6, ErrorCode::Ok, &[0, 0, 0, 0]);
    assert!(matches!(result(&mut held), Some(Ok(()))));
    let mut list = h.s.hosts.hosts().to_vec();
    list.sort_by_key(|h| h.port);
    assert_eq!(list, others);
}

#[test]
fn an_unchanged_list_moves_nobody() {
    let (mut h, _) = connected_to(3);
    h.s.update_hosts(hosts(3), h.now);
    assert!(h.actions().is_empty());
    let mut rx = h.get_data("/a");
    let xid = h.xids()[0].0;
    h.reply(xid, 5, ErrorCode::Ok, &[0, 0, 0, 0]);
    assert!(result(&mut rx).is_some());
    assert_eq!(h.state(), SessionState::Connected);
}
