//! What an attempt's end leaves: the wait before the next, and its result as kept.

use std::time::Duration;

use crate::kinds::goal::Backoff;
use crate::step::MAX_RESULT_BYTES;

/// Wait before the attempt after `failed_attempts` failures: initial × factor^(n-1), at most max.
pub fn backoff(backoff: &Backoff, failed_attempts: i32) -> Duration {
    let initial = backoff.initial.get();
    let max = backoff.max.get();
    let exponent = failed_attempts.saturating_sub(1).clamp(0, 30) as u32;
    let factor = (backoff.factor.max(1) as u32).saturating_pow(exponent);
    initial.saturating_mul(factor).min(max)
}

/// A step's result cut to `MAX_RESULT_BYTES` at a character boundary.
pub fn truncate_result(message: &str) -> String {
    if message.len() <= MAX_RESULT_BYTES {
        return message.to_string();
    }
    let mut end = MAX_RESULT_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_string()
}
