//! Go-style durations (`15s`, `2m`, `1h30m`, `1.5h`), as the schemas accept them.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;

/// The longest duration overseer acts on. The schema accepts up to 32 digits
/// (`99999999999999999999h`), which means "practically never": it is read as this, so
/// that no sum with it can overflow.
pub const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// The longest a reconcile waits for a time-based rule before looking again: kube's
/// scheduler cannot hold a requeue past about two years (its timer wheel panics), and
/// a rule far ahead is as well checked again hourly.
pub const LONGEST_REQUEUE: Duration = Duration::from_secs(3600);

/// Parses a duration the schema pattern accepts, capped at `LONGEST`; `None` for
/// anything else.
pub fn parse(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let value: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let (unit, seconds) = [("ms", 0.001), ("h", 3600.0), ("m", 60.0), ("s", 1.0)]
            .into_iter()
            .find(|(unit, _)| rest.starts_with(unit))?;
        total += value * seconds;
        rest = &rest[unit.len()..];
    }
    Some(Duration::from_secs_f64(total.min(LONGEST.as_secs_f64())))
}

/// `parse` for a command-line argument, with an error that says what is expected.
pub fn parse_arg(text: &str) -> Result<Duration, String> {
    parse(text).ok_or_else(|| format!("{text:?} is not a duration such as 90s, 5m or 1h"))
}

/// `at + wait`, or the latest time there is when that lies beyond it (a forged or
/// far-future timestamp plus a long wait must not panic).
pub fn later(at: Timestamp, wait: Duration) -> Timestamp {
    SignedDuration::try_from(wait)
        .ok()
        .and_then(|wait| at.checked_add(wait).ok())
        .unwrap_or(Timestamp::MAX)
}

/// How long ago `then` was at `now`: zero when there is no `then` or it is later.
pub fn since(now: Timestamp, then: Option<&Time>) -> Duration {
    then.map_or(Duration::ZERO, |t| {
        now.duration_since(t.0).try_into().unwrap_or(Duration::ZERO)
    })
}

/// When `wait` after `then` is over.
pub fn after(then: &Time, wait: Duration) -> Timestamp {
    later(then.0, wait)
}

/// The controller's answer: look again after `after` (at most `LONGEST_REQUEUE`), or
/// only when something changes.
pub fn requeue(after: Option<Duration>) -> Action {
    after.map_or_else(Action::await_change, |after| {
        Action::requeue(after.min(LONGEST_REQUEUE))
    })
}

/// The shortest heartbeat (`loop.interval`) acted on: a shorter one (`1ms` is
/// schema-valid) would have each shim write its status a thousand times a second.
pub const SHORTEST_HEARTBEAT: Duration = Duration::from_secs(1);

/// Parses a heartbeat interval, `off` or at least `SHORTEST_HEARTBEAT`.
pub fn parse_heartbeat(text: &str) -> Option<Option<Duration>> {
    parse_or_off(text).map(|interval| interval.map(|i| i.max(SHORTEST_HEARTBEAT)))
}

/// Parses a duration that may be `off`: `Some(None)` for off.
pub fn parse_or_off(text: &str) -> Option<Option<Duration>> {
    if text == "off" {
        Some(None)
    } else {
        parse(text).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_schema_accepts() {
        let rows = [
            ("15s", Some(15.0)),
            ("2m", Some(120.0)),
            ("1h30m", Some(5400.0)),
            ("1.5h", Some(5400.0)),
            ("250ms", Some(0.25)),
            ("1m30s", Some(90.0)),
            ("", None),
            ("5", None),
            ("5x", None),
            ("m", None),
            ("-5s", None),
        ];
        for (text, expected) in rows {
            assert_eq!(parse(text).map(|d| d.as_secs_f64()), expected, "{text}");
        }
        assert_eq!(parse_or_off("off"), Some(None));
        assert_eq!(parse_or_off("10s"), Some(Some(Duration::from_secs(10))));
    }

    #[test]
    fn schema_valid_giants_are_capped_not_a_panic() {
        for text in [
            "99999999999999999999h",
            "99999999999h",
            "9999999999999999999999999999999s",
            "99999999999999999999h99999999999h",
        ] {
            assert_eq!(parse(text), Some(LONGEST), "{text}");
        }
    }

    #[test]
    fn a_heartbeat_is_at_least_a_second() {
        assert_eq!(parse_heartbeat("1ms"), Some(Some(SHORTEST_HEARTBEAT)));
        assert_eq!(parse_heartbeat("15s"), Some(Some(Duration::from_secs(15))));
        assert_eq!(parse_heartbeat("off"), Some(None));
        assert_eq!(parse_heartbeat("x"), None);
    }

    #[test]
    fn later_saturates_at_the_end_of_time() {
        let now: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        assert_eq!(
            later(now, Duration::from_secs(60)).to_string(),
            "2026-12-01T00:01:00Z"
        );
        assert_eq!(later(now, LONGEST * 1000), Timestamp::MAX);
        assert_eq!(
            later(Timestamp::MAX, Duration::from_secs(1)),
            Timestamp::MAX
        );
        assert_eq!(later(now, Duration::MAX), Timestamp::MAX);
    }

    #[test]
    fn requeues_are_capped_at_an_hour() {
        assert_eq!(requeue(None), Action::await_change());
        assert_eq!(
            requeue(Some(Duration::from_secs(5))),
            Action::requeue(Duration::from_secs(5))
        );
        assert_eq!(requeue(Some(LONGEST)), Action::requeue(LONGEST_REQUEUE));
    }
}
