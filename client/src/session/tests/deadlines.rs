//! Request deadlines kept by the session: answered on time, matched when late, never sent
//! when they passed before sending.

use super::*;

fn get_data_until(h: &mut Harness, path: &str, deadline: Instant) -> ReplyRx {
    h.submit_until(
        Request::GetData(GetDataRequest {
            path: path.into(),
            watch: false,
        }),
        None,
        Some(deadline),
    )
}

#[test]
fn a_request_on_the_wire_times_out_at_its_deadline_and_its_late_reply_is_matched() {
    let mut h = connected();
    let deadline = h.now + Duration::from_millis(500);
    let mut slow = get_data_until(&mut h, "/slow", deadline);
    let mut next = h.get_data("/next");
    assert_eq!(h.xids(), vec![(1, OpCode::GetData), (2, OpCode::GetData)]);
    assert_eq!(h.s.next_deadline(), Some(deadline), "before the ping's");

    h.advance(Duration::from_millis(499));
    assert_eq!(result(&mut slow), None);
    h.advance(Duration::from_millis(1));
    assert_eq!(result(&mut slow), Some(Err(ErrorKind::Timeout)));
    assert_eq!(h.state(), SessionState::Connected, "the connection stays");
    assert_eq!(
        h.s.take_completed(),
        0,
        "still in flight: its room is not free"
    );

    // The late reply takes its place in the FIFO: the next reply goes to the next caller.
    h.reply(1, 10, ErrorCode::Ok, &[0; 4]);
    assert_eq!(h.s.take_completed(), 1);
    assert_eq!(h.state(), SessionState::Connected, "no xid mismatch");
    h.reply(2, 11, ErrorCode::NoNode, &[]);
    assert_eq!(result(&mut next), Some(Err(ErrorKind::NoNode)));
    assert_eq!(h.s.take_completed(), 1);
}

#[test]
fn a_request_held_for_the_reconnect_is_dropped_at_its_deadline_and_never_sent() {
    let mut h = connected();
    h.s.on_disconnected(h.now, "test");
    h.actions();
    let deadline = h.now + Duration::from_millis(200);
    let mut held = get_data_until(&mut h, "/held", deadline);
    let mut patient = h.get_data("/patient");
    h.advance(Duration::from_millis(200));
    assert_eq!(result(&mut held), Some(Err(ErrorKind::Timeout)));
    assert_eq!(
        h.s.take_completed(),
        1,
        "never sent: its room is free at once"
    );
    assert_eq!(result(&mut patient), None);

    h.establish(0x42, 3000);
    let sent = h.xids();
    assert_eq!(
        sent.iter().filter(|(_, op)| *op == OpCode::GetData).count(),
        1,
        "only the request without a deadline goes out: {sent:?}"
    );
}

#[test]
fn a_request_taken_after_its_deadline_fails_at_once() {
    let mut h = connected();
    let now = h.now;
    let mut late = get_data_until(&mut h, "/late", now);
    assert_eq!(result(&mut late), Some(Err(ErrorKind::Timeout)));
    assert!(h.xids().is_empty());
    assert_eq!(h.s.take_completed(), 1);
}

#[test]
fn the_earliest_deadline_is_followed_whatever_the_order_of_the_calls() {
    let mut h = connected();
    let start = h.now;
    let mut late = get_data_until(&mut h, "/a", start + Duration::from_millis(900));
    let mut early = get_data_until(&mut h, "/b", start + Duration::from_millis(300));
    h.xids();
    assert_eq!(
        h.s.next_deadline(),
        Some(h.now + Duration::from_millis(300))
    );
    h.advance(Duration::from_millis(300));
    assert_eq!(result(&mut early), Some(Err(ErrorKind::Timeout)));
    assert_eq!(result(&mut late), None);
    assert_eq!(
        h.s.next_deadline(),
        Some(h.now + Duration::from_millis(600))
    );
    // Answered in time: the deadline followed is stale, and firing on it changes nothing.
    h.reply(1, 10, ErrorCode::NoNode, &[]);
    assert_eq!(result(&mut late), Some(Err(ErrorKind::NoNode)));
    h.reply(2, 11, ErrorCode::Ok, &[0; 4]);
    h.advance(Duration::from_millis(600));
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(h.s.take_completed(), 2);
    assert_ne!(
        h.s.next_deadline(),
        Some(h.now),
        "nothing left to follow but the session's own timers"
    );
}

/// Requests on the wire time out in the order of their deadlines, not of their calls, each
/// when its own deadline passes, and the machine's one timer follows the earliest deadline of
/// a request still waiting.
#[test]
fn requests_time_out_in_deadline_order_whatever_their_call_order() {
    let mut h = connected();
    let start = h.now;
    let at = |ms: u64| start + Duration::from_millis(ms);
    let mut calls: Vec<(u64, ReplyRx, Option<u64>)> = [400, 100, 300, 200]
        .into_iter()
        .map(|ms| (ms, get_data_until(&mut h, &format!("/n{ms}"), at(ms)), None))
        .collect();
    let mut patient = h.get_data("/patient");
    assert_eq!(h.xids().len(), 5);
    for step in [100, 200, 300, 400] {
        assert_eq!(h.s.next_deadline(), Some(at(step)), "at {step} ms");
        // Just before: nothing new fails.
        let before = at(step) - Duration::from_millis(1) - h.now;
        h.advance(before);
        for (ms, rx, failed) in &mut calls {
            if failed.is_none() {
                assert_eq!(result(rx), None, "{ms} ms failed before {step} ms");
            }
        }
        h.advance(Duration::from_millis(1));
        for (ms, rx, failed) in &mut calls {
            if failed.is_none() && result(rx) == Some(Err(ErrorKind::Timeout)) {
                *failed = Some(step);
                assert_eq!(*ms, step, "{ms} ms failed at {step} ms");
            }
        }
    }
    assert!(calls.iter().all(|(ms, _, failed)| *failed == Some(*ms)));
    assert_eq!(result(&mut patient), None);
    assert!(
        h.s.next_deadline() > Some(at(400)),
        "no request's deadline left to follow"
    );
    // Their late replies are matched in call order, and the connection stays.
    for xid in 1..=5 {
        h.reply(xid, 10 + i64::from(xid), ErrorCode::Ok, &[0; 4]);
    }
    assert_eq!(h.state(), SessionState::Connected);
    assert_eq!(h.s.take_completed(), 5);
    assert!(matches!(result(&mut patient), Some(Ok(()))));
}

/// A stream of requests answered in time leaves nothing for the timer: it fires for no
/// answered request, however long their deadlines.
#[test]
fn answered_requests_leave_no_deadline_behind() {
    let mut h = connected();
    let far = h.now + Duration::from_secs(3600);
    for xid in 1..=1000 {
        let mut rx = get_data_until(&mut h, "/n", far);
        h.xids();
        h.reply(xid, i64::from(xid), ErrorCode::NoNode, &[]);
        assert_eq!(result(&mut rx), Some(Err(ErrorKind::NoNode)));
    }
    assert!(
        h.s.next_deadline() < Some(far),
        "the ping's, not a request's"
    );
    assert_eq!(h.s.take_completed(), 1000);
}
