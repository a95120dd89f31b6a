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

/// A command-line duration, or `off` (None).
pub fn parse_arg_or_off(text: &str) -> Result<Option<Duration>, String> {
    parse_or_off(text)
        .ok_or_else(|| format!("{text:?} is neither off nor a duration such as 90s, 5m or 1h"))
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
    parse_or_off(text).map(heartbeat)
}

/// A heartbeat interval as acted on: `off`, or at least `SHORTEST_HEARTBEAT`.
pub fn heartbeat(interval: Option<Duration>) -> Option<Duration> {
    interval.map(|i| i.max(SHORTEST_HEARTBEAT))
}

/// Parses a duration that may be `off`: `Some(None)` for off.
pub fn parse_or_off(text: &str) -> Option<Option<Duration>> {
    if text == "off" {
        Some(None)
    } else {
        parse(text).map(Some)
    }
}

/// A Go-style duration as a spec writes it (`15s`, `1h30m`): parsed once, when the
/// object is read, so every reader gets the same value and none falls back to a default
/// of its own; written back as the user wrote it, so an apply round-trips unchanged.
/// Its schema (pattern, length) is given at each field by `api::duration_schema`.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecDuration {
    written: Written,
    value: Duration,
}

/// A duration's text as written: the texts the defaults write are borrowed, for every
/// Agent carries a dozen durations and nearly all are defaults (10,000 agents held
/// 120,000 copies of `"15s"` and its like).
type Written = std::borrow::Cow<'static, str>;

/// The texts the spec defaults write (`default_of`).
const DEFAULT_TEXTS: [&str; 11] = [
    "off", "10s", "15s", "60s", "90s", "2m", "5m", "10m", "15m", "30m", "1h",
];

fn written(text: &str) -> Written {
    match DEFAULT_TEXTS.iter().find(|t| **t == text) {
        Some(text) => Written::Borrowed(text),
        None => Written::Owned(text.to_string()),
    }
}

impl SpecDuration {
    /// The duration, capped at `LONGEST`.
    pub fn get(&self) -> Duration {
        self.value
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.written
    }
}

impl std::str::FromStr for SpecDuration {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Ok(SpecDuration {
            written: written(text),
            value: parse_arg(text)?,
        })
    }
}

/// A duration that may be `off`, such as `loop.interval`.
#[derive(Clone, Debug, PartialEq)]
pub struct DurationOrOff {
    written: Written,
    value: Option<Duration>,
}

impl DurationOrOff {
    /// The duration, or `None` when `off`.
    pub fn get(&self) -> Option<Duration> {
        self.value
    }

    /// The text as written.
    pub fn as_str(&self) -> &str {
        &self.written
    }
}

impl std::str::FromStr for DurationOrOff {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let value = parse_or_off(text)
            .ok_or_else(|| format!("{text:?} is neither off nor a duration such as 90s"))?;
        Ok(DurationOrOff {
            written: written(text),
            value,
        })
    }
}

/// Serde for both: a string in, the same string out.
macro_rules! as_written {
    ($type:ty) => {
        impl serde::Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.written)
            }
        }

        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
as_written!(SpecDuration);
as_written!(DurationOrOff);

/// A spec default, written as the schema shows it. Only for the literal defaults of the
/// types, every one of which a unit test reads (`an_empty_spec_takes_every_default`),
/// and each one of `DEFAULT_TEXTS`.
pub fn default_of<T: std::str::FromStr<Err = String>>(text: &'static str) -> T {
    debug_assert!(
        DEFAULT_TEXTS.contains(&text),
        "{text:?} is not in DEFAULT_TEXTS"
    );
    match text.parse() {
        Ok(value) => value,
        Err(error) => unreachable!("the default {text:?} does not parse: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_spec_takes_every_default() {
        use serde_json::json;
        let secs = Duration::from_secs;
        let loop_: crate::agent::LoopSpec = serde_json::from_value(json!({})).unwrap();
        assert_eq!(loop_.interval.get(), Some(secs(15)));
        assert_eq!(loop_.idle_after.get(), secs(60));
        assert_eq!(loop_.cooldown.get(), secs(120));
        assert_eq!(loop_.stall_after.get(), secs(1800));
        let defaults: crate::goal::GoalDefaults = serde_json::from_value(json!({})).unwrap();
        assert_eq!(defaults.timeout.get(), secs(3600));
        assert_eq!(defaults.backoff.initial.get(), secs(10));
        assert_eq!(defaults.backoff.max.get(), secs(300));
        let watch: crate::prwatch::PRWatchSpec = serde_json::from_value(json!({
            "url": "https://github.com/o/r/pull/1", "agent": "a",
            "github": {"tokenSecretRef": {"name": "t", "key": "k"}}}))
        .unwrap();
        assert_eq!(watch.poll_interval.get(), secs(60));
        assert_eq!(watch.quiet_period.get(), secs(90));
    }

    #[test]
    fn a_default_text_is_kept_without_a_copy_and_any_other_as_written() {
        use std::borrow::Cow;
        let default: SpecDuration = serde_json::from_str("\"15s\"").unwrap();
        assert!(matches!(default.written, Cow::Borrowed("15s")));
        let off: DurationOrOff = serde_json::from_str("\"off\"").unwrap();
        assert!(matches!(off.written, Cow::Borrowed("off")));
        let other: SpecDuration = serde_json::from_str("\"15000ms\"").unwrap();
        assert!(matches!(&other.written, Cow::Owned(text) if text == "15000ms"));
        assert_eq!(other.get(), default.get());
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"15000ms\"");
    }

    #[test]
    fn a_spec_duration_is_written_back_as_written_and_a_bad_one_is_named() {
        let read: SpecDuration = serde_json::from_str("\"1h30m\"").unwrap();
        assert_eq!(read.get(), Duration::from_secs(5400));
        assert_eq!(serde_json::to_string(&read).unwrap(), "\"1h30m\"");
        let off: DurationOrOff = serde_json::from_str("\"off\"").unwrap();
        assert_eq!((off.get(), off.as_str()), (None, "off"));
        let bad = serde_json::from_str::<SpecDuration>("\"soon\"").unwrap_err();
        assert!(
            bad.to_string().contains("\"soon\" is not a duration"),
            "{bad}"
        );
        assert!(serde_json::from_str::<SpecDuration>("\"off\"").is_err());
    }

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

    /// Why this module is not kube's `kube::core::Duration` (docs/design-notes.md): on
    /// the same inputs it panics at a schema-valid giant, accepts what the schemas refuse,
    /// and writes back a different text than the user applied. When kube changes any of
    /// these, this fails, and the choice is worth making again.
    #[test]
    fn kube_duration_falls_short_where_this_one_is_used() {
        let giant = "99999999999999999999h";
        let kube_reads = std::panic::catch_unwind(|| giant.parse::<kube::core::Duration>());
        assert!(kube_reads.is_err(), "kube's parser now survives {giant}");
        assert_eq!(parse(giant), Some(LONGEST));

        for refused in ["-5s", "0", "10ns"] {
            assert!(refused.parse::<kube::core::Duration>().is_ok(), "{refused}");
            assert_eq!(parse(refused), None, "{refused}");
        }

        let kube_writes: kube::core::Duration = "90m".parse().unwrap();
        assert_ne!(kube_writes.to_string(), "90m");
        let ours: SpecDuration = "90m".parse().unwrap();
        assert_eq!(ours.as_str(), "90m");
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
