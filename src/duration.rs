//! Go-style durations (`15s`, `2m`, `1h30m`, `1.5h`), as the schemas accept them.

use std::time::Duration;

/// Parses a duration the schema pattern accepts; `None` for anything else.
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
    Some(Duration::from_secs_f64(total))
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
}
