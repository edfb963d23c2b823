//! The ranges the builder accepts, and the checks `connect` makes before anything starts: every
//! value a caller can pass is either used as given or refused with a typed error, never
//! clamped in silence, and none can make a deadline overflow.

use std::time::Duration;

use crate::error::{ErrorKind, Result};

/// The longest timeout any setting takes: the session timeout travels as a 32-bit count of
/// milliseconds (about 24.8 days), and no other deadline needs to be longer.
pub const MAX_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// The smallest frame limit, either way: room for headers and a reasonable path.
pub const MIN_FRAME_LIMIT: usize = 1024;

/// The largest frame limit, either way: a frame's length travels as a positive 32-bit number.
pub const MAX_FRAME_LIMIT: usize = i32::MAX as usize;

/// Bytes of a request beyond its path that every request with a path carries: header (8),
/// path length (4) and at least a flag or version (4).
const REQUEST_OVERHEAD: usize = 16;

fn refuse<T>(message: String) -> Result<T> {
    Err(ErrorKind::InvalidArgument(message).into())
}

/// A timeout setting: at least 1 ms (timeouts travel and are counted in milliseconds), at most
/// [`MAX_TIMEOUT`].
pub(crate) fn timeout(setting: &str, value: Duration) -> Result<Duration> {
    if value < Duration::from_millis(1) {
        return refuse(format!("{setting} {value:?} is under 1 ms"));
    }
    if value > MAX_TIMEOUT {
        return refuse(format!(
            "{setting} {value:?} exceeds the longest supported, {MAX_TIMEOUT:?}"
        ));
    }
    Ok(value)
}

/// A count that must be at least 1.
pub(crate) fn at_least_one(setting: &str, value: usize) -> Result<usize> {
    if value == 0 {
        return refuse(format!("{setting} must be at least 1"));
    }
    Ok(value)
}

/// A frame size limit, within [`MIN_FRAME_LIMIT`]`..=`[`MAX_FRAME_LIMIT`].
pub(crate) fn frame_limit(setting: &str, value: usize) -> Result<usize> {
    if !(MIN_FRAME_LIMIT..=MAX_FRAME_LIMIT).contains(&value) {
        return refuse(format!(
            "{setting} {value} outside {MIN_FRAME_LIMIT}..={MAX_FRAME_LIMIT} bytes"
        ));
    }
    Ok(value)
}

/// A chroot must leave room for a path of its own in a request of `max_frame` bytes, or every
/// request would be refused.
pub(crate) fn chroot_fits(chroot: &str, max_frame: usize) -> Result<()> {
    if chroot.len() + REQUEST_OVERHEAD + MIN_FRAME_LIMIT / 2 > max_frame {
        return refuse(format!(
            "a chroot of {} bytes leaves too little of the {max_frame}-byte request limit",
            chroot.len()
        ));
    }
    Ok(())
}

/// Bytes of a `setWatches2` frame beyond its paths: header (8), relative zxid (8) and the five
/// lists' lengths (20).
pub(crate) const SET_WATCHES_OVERHEAD: usize = 36;

/// Bytes of a notification beyond its path: reply header (16), type, state and the path's
/// length (12).
const NOTIFICATION_OVERHEAD: usize = 28;

/// A watched path must fit, alone, in the `setWatches` frame that sets it again after a
/// reconnect: the server closes the connection on a larger frame, and would on every reconnect
/// of the session, which could then never carry a request again. Its events must fit the
/// incoming limit, or they could not be read.
pub(crate) fn watch_fits(
    server_path_len: usize,
    max_frame: usize,
    max_incoming: usize,
) -> Result<()> {
    let size = SET_WATCHES_OVERHEAD + 4 + server_path_len;
    if size > max_frame {
        return Err(ErrorKind::DataTooLarge {
            size,
            max: max_frame,
        }
        .into());
    }
    let size = NOTIFICATION_OVERHEAD + server_path_len;
    if size > max_incoming {
        return Err(ErrorKind::ReplyTooLarge {
            size,
            max: max_incoming,
        }
        .into());
    }
    Ok(())
}

/// An identity to replay on every connection must fit in one request frame: a server closes
/// the connection on a larger one, and would do so on every reconnect.
pub(crate) fn auth_fits(scheme: &str, auth_len: usize, max_frame: usize) -> Result<()> {
    if scheme.is_empty() {
        return refuse("auth scheme is empty".into());
    }
    let size = 8 + 4 + 4 + scheme.len() + 4 + auth_len;
    if size > max_frame {
        return Err(ErrorKind::DataTooLarge {
            size,
            max: max_frame,
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_taken_in_range_and_refused_outside() {
        assert!(timeout("t", Duration::ZERO).is_err());
        assert!(timeout("t", Duration::from_micros(999)).is_err());
        assert_eq!(
            timeout("t", Duration::from_millis(1)),
            Ok(Duration::from_millis(1))
        );
        assert_eq!(timeout("t", MAX_TIMEOUT), Ok(MAX_TIMEOUT));
        assert!(timeout("t", MAX_TIMEOUT + Duration::from_nanos(1)).is_err());
        assert!(timeout("t", Duration::MAX).is_err());
    }

    #[test]
    fn frame_limits_and_what_must_fit_in_them() {
        assert!(frame_limit("f", MIN_FRAME_LIMIT - 1).is_err());
        assert!(frame_limit("f", MAX_FRAME_LIMIT + 1).is_err());
        assert!(frame_limit("f", usize::MAX).is_err());
        assert_eq!(frame_limit("f", 1 << 20), Ok(1 << 20));
        assert!(chroot_fits("/app", 1 << 20).is_ok());
        assert!(chroot_fits(&"/a".repeat(1 << 19), 1 << 20).is_err());
        assert!(auth_fits("digest", 10, 1 << 20).is_ok());
        assert!(auth_fits("", 10, 1 << 20).is_err());
        assert!(matches!(
            auth_fits("digest", 1 << 20, 1 << 20).unwrap_err().kind(),
            ErrorKind::DataTooLarge { .. }
        ));
        assert!(watch_fits(1024 - 40, 1024, 1 << 20).is_ok());
        assert!(matches!(
            watch_fits(1024 - 39, 1024, 1 << 20).unwrap_err().kind(),
            ErrorKind::DataTooLarge {
                size: 1025,
                max: 1024
            }
        ));
        assert!(watch_fits(1024 - 28, 1 << 20, 1024).is_ok());
        assert!(matches!(
            watch_fits(1024 - 27, 1 << 20, 1024).unwrap_err().kind(),
            ErrorKind::ReplyTooLarge {
                size: 1025,
                max: 1024
            }
        ));
    }
}
